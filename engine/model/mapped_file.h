// A read-only memory mapping of a whole file (POSIX mmap).
#pragma once

#include <cstddef>
#include <string>

namespace kvscope {

class MappedFile {
public:
    // Maps `path` read-only; throws kvscope::Error naming the file and the
    // system's reason. An empty file gives an empty mapping (data() null).
    explicit MappedFile(const std::string& path);
    ~MappedFile();

    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::byte* data() const { return data_; }
    std::size_t size() const { return size_; }

    // Lets the OS drop the pages of this mapping that lie wholly inside
    // [from, from + bytes) (kernels/cpu/os_memory.h's release_file_pages):
    // on Linux they stop counting in the process's resident memory at once,
    // and are read again from the file (usually from the page cache) if
    // touched later; elsewhere a hint (macOS reclaims them first under
    // pressure). For bytes the process keeps a copy of elsewhere. Returns
    // the bytes let go: 0 for a range outside the mapping or one with no
    // whole page.
    std::size_t release(const std::byte* from, std::size_t bytes) const;

private:
    void unmap() noexcept;

    const std::byte* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace kvscope

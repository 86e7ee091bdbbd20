#include "engine/model/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/core/error.h"
#include "kernels/cpu/os_memory.h"

namespace kvscope {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
    throw Error(path + ": cannot " + what + ": " + std::strerror(error));
}

// Closes the descriptor on every path out of the constructor; the mapping
// stays valid after close.
struct FileDescriptor {
    int fd;
    ~FileDescriptor() {
        if (fd >= 0)
            ::close(fd);
    }
};

} // namespace

MappedFile::MappedFile(const std::string& path) {
    const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (file.fd < 0)
        fail(path, "open", errno);
    struct stat info {};
    if (::fstat(file.fd, &info) != 0)
        fail(path, "stat", errno);
    if (!S_ISREG(info.st_mode))
        throw Error(path + ": not a regular file");
    size_ = static_cast<std::size_t>(info.st_size);
    if (size_ == 0) // mmap rejects a zero length
        return;
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
    if (mapped == MAP_FAILED)
        fail(path, "map", errno);
    data_ = static_cast<const std::byte*>(mapped);
}

MappedFile::~MappedFile() { unmap(); }

std::size_t MappedFile::release(const std::byte* from, std::size_t bytes) const {
    if (data_ == nullptr || from < data_ || bytes > size_ || from - data_ > static_cast<std::ptrdiff_t>(size_ - bytes))
        return 0;
    return kernels::cpu::release_file_pages(from, bytes);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
    if (this != &other) {
        unmap();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void MappedFile::unmap() noexcept {
    if (data_ != nullptr)
        ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
    size_ = 0;
}

} // namespace kvscope

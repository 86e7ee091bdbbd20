#include "kernels/cpu/os_memory.h"

#include <cstdint>
#include <fstream>

#include <sys/mman.h>
#include <unistd.h>

namespace kvscope::kernels::cpu {
namespace {

struct PageRange {
    std::uintptr_t begin = 0, end = 0;
    std::size_t bytes() const { return end > begin ? end - begin : 0; }
    void* data() const { return reinterpret_cast<void*>(begin); }
};

// The whole pages inside [from, from + bytes).
PageRange whole_pages(const void* from, std::size_t bytes) {
    const std::uintptr_t page = page_size();
    const auto at = reinterpret_cast<std::uintptr_t>(from);
    return {(at + page - 1) / page * page, (at + bytes) / page * page};
}

} // namespace

std::size_t page_size() {
    static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); // POSIX: always known
    return size;
}

std::size_t huge_page_size() {
    static const std::size_t size = [] {
        std::size_t bytes = 0;
#if defined(__linux__)
        std::ifstream("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") >> bytes; // unread: stays 0
#endif
        return bytes;
    }();
    return size;
}

bool advise_huge_pages([[maybe_unused]] void* data, [[maybe_unused]] std::size_t bytes) {
#if defined(MADV_HUGEPAGE)
    return ::madvise(data, bytes, MADV_HUGEPAGE) == 0;
#else
    return false;
#endif
}

std::size_t release_file_pages(const void* from, std::size_t bytes) {
#if defined(__linux__)
    const PageRange pages = whole_pages(from, bytes);
    if (pages.bytes() == 0 || ::madvise(pages.data(), pages.bytes(), MADV_DONTNEED) != 0)
        return 0;
    return pages.bytes();
#else
    return detail::release_file_pages_posix(from, bytes);
#endif
}

namespace detail {

std::size_t release_file_pages_posix(const void* from, std::size_t bytes) {
    const PageRange pages = whole_pages(from, bytes);
    if (pages.bytes() == 0 || ::posix_madvise(pages.data(), pages.bytes(), POSIX_MADV_DONTNEED) != 0)
        return 0;
    return pages.bytes();
}

} // namespace detail

} // namespace kvscope::kernels::cpu

// What kvscope asks of the operating system's virtual memory, in one place
// (issue 35, "portable by construction"): the page size, transparent huge
// pages, and letting go of a file mapping's pages. Each call has a POSIX
// fallback; the Linux-only interfaces (MADV_HUGEPAGE, MADV_DONTNEED's
// immediate drop) are named in this file's .cpp alone
// (cmake/check_platform_calls.cmake enforces it).
#pragma once

#include <cstddef>

namespace kvscope::kernels::cpu {

// The system's page size in bytes (sysconf(_SC_PAGESIZE), read once): 4 KiB
// on x86 Linux, 16 KiB on Apple silicon, 4, 16 or 64 KiB on ARM Linux.
// Never hard-code 4096 where a page is meant.
std::size_t page_size();

// The size of one transparent huge page, what advise_huge_pages asks for:
// Linux says it in /sys/kernel/mm/transparent_hugepage/hpage_pmd_size (2 MiB
// with 4 KiB pages, 32 MiB with 16 KiB, 512 MiB with 64 KiB). 0 where the
// system has none or does not say (macOS, the BSDs, a kernel without THP).
std::size_t huge_page_size();

// Asks for transparent huge pages over [data, data + bytes) (Linux
// madvise(MADV_HUGEPAGE), which takes effect where the system's THP setting
// is "madvise" or "always"). A hint: returns whether the system took it;
// false and nothing done where there is no such hint (macOS, the BSDs) or
// the kernel refused. Precondition: data is page-aligned.
bool advise_huge_pages(void* data, std::size_t bytes);

// Lets go of the pages of a read-only file mapping (MAP_PRIVATE, never
// written) that lie wholly inside [from, from + bytes); the first and last
// pages may hold other bytes and are kept. Returns the bytes of those whole
// pages (0 when the range holds none, or the system refused).
//  - Linux: madvise(MADV_DONTNEED) drops them at once: they stop counting in
//    the process's resident memory and are read again from the file (usually
//    from the page cache) if touched.
//  - Elsewhere: posix_madvise(POSIX_MADV_DONTNEED), a hint. On macOS it
//    deactivates the pages (XNU: vm_map_msync(VM_SYNC_DEACTIVATE)): they
//    stay resident, first in line to be reclaimed under memory pressure, and
//    the resident size does not drop at once. Not MADV_FREE (XNU frees only
//    anonymous memory with it) nor msync(MS_INVALIDATE) (it would evict the
//    file's pages from the cache for every process that maps the file).
// Precondition: the range is inside one such mapping. Never call it on
// anonymous or written memory: on Linux its contents would be lost (zeroed).
std::size_t release_file_pages(const void* from, std::size_t bytes);

namespace detail {

// The fallback branch of release_file_pages, built on every system so that
// its tests run on Linux too (where glibc's posix_madvise takes
// POSIX_MADV_DONTNEED as a no-op: Linux's MADV_DONTNEED would discard).
std::size_t release_file_pages_posix(const void* from, std::size_t bytes);

} // namespace detail

} // namespace kvscope::kernels::cpu

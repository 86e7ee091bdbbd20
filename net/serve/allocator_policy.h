// net/serve: how the server process asks glibc's allocator to give memory
// back (issue 33 item 7: after a burst of hostile requests the resident
// memory returns near its idle level). The one file that names glibc's
// allocator calls (mallopt, malloc_trim; cmake/check_platform_calls.cmake):
// both are glibc extensions, and each function here is a no-op elsewhere
// (macOS's libmalloc, musl: no such calls; whether their resident memory
// comes back after a burst was not measured).
#pragma once

#include <cstddef>

namespace kvscope::serve {

// A block of at least this many bytes gets a mapping of its own from glibc,
// returned to the system as soon as it is freed.
inline constexpr std::size_t kOwnMappingBytes = std::size_t(1) << 20;

// Fixes glibc's mmap threshold at kOwnMappingBytes for the whole process
// (no-op elsewhere). glibc's threshold starts at 128 KiB but rises to the
// size of each mapped block freed (up to 32 MiB): after one 1 MiB request
// body, every later body and its JSON came from the per-thread arenas and
// stayed there. Measured with tests/app/test_cli_serve_memory (stories260K,
// three passes of the hostile JSON matrix plus gzip and chunked floods):
// 29 MB idle, 90-121 MB after the burst without it, 42-44 MB with it.
// malloc_trim(0) once the server was idle changed nothing measurable
// (44.0 vs 43.7 MB) and is not used. Blocks under 1 MiB (the engine's
// per-step buffers) stay in the arenas as glibc would keep them. Call
// before serving; idempotent.
void map_large_blocks_apart();

// A request body of at least this many bytes, once dropped, has the
// allocator give its free memory back (give_back_free_memory).
inline constexpr std::size_t kTrimAfterBytes = std::size_t(1) << 20;

// Asks glibc to return the free memory at the top of its heaps
// (malloc_trim(0)); no-op elsewhere. glibc serves a size it has freed once
// from its heap afterwards, and keeps it: called after a large body is
// dropped, a burst of large requests leaves no lasting growth.
void give_back_free_memory();

} // namespace kvscope::serve

// engine/bench: the memory-bandwidth ceiling `bench decode` compares
// decode against.
#pragma once

namespace kvscope {

// This machine's copy bandwidth in GB/s (1e9 bytes), STREAM's convention:
// bytes read plus bytes written per second, copying a buffer far larger
// than the caches with `threads` threads; the best of several runs.
double measure_copy_bandwidth_gb_per_s(int threads);

} // namespace kvscope

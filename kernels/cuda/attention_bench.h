// Timing of the CUDA decode attention on synthetic data, for
// `kvscope-cuda-bench` (tests/gpu) and any CLI that wants GPU numbers: no
// engine, no model, one layer of a pool the caller describes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/paged_kv.h"

namespace kvscope::kernels::cuda {

struct DecodeBenchConfig {
    // One layer as KvLayout lays it out (engine/runtime/paged_kv_view of a
    // one-layer KvLayout, any pool pointer): the bench allocates the pool,
    // fills it through write_kv with random K/V, and sets pool, n_blocks
    // and (fp8: all 1.0) fixed_scales itself.
    cpu::PagedKv layout;
    // What one token's K and V of this layer occupy, scales included
    // (KvLayout::bytes_per_token() of the one-layer layout): the bytes a
    // call must read per position, for the bandwidth figure.
    std::size_t kv_bytes_per_token = 0;
    std::uint32_t n_heads = 0;
    std::uint32_t batch = 0;   // sequences decoding one token each
    std::uint32_t context = 0; // tokens each attends to
    bool paged = true;         // shuffled block table; false: each sequence in consecutive blocks, no table
    int iterations = 20;       // timed calls, after 3 untimed
    std::uint64_t seed = 1;
};

struct DecodeBenchResult {
    double seconds_per_call = 0.0; // mean over the timed calls (CUDA events)
    double kv_bytes_per_call = 0.0; // kv_bytes_per_token x batch x context
    double bytes_per_second() const { return kv_bytes_per_call / seconds_per_call; }
};

// Throws std::invalid_argument for a bad configuration, CudaError for a
// CUDA failure (out of memory included).
DecodeBenchResult bench_decode_attention(const DecodeBenchConfig& config);

// Device-to-device cudaMemcpy of a `bytes` buffer, `iterations` times after
// one untimed copy: bytes read plus bytes written per second, the ceiling a
// memory-bound kernel is measured against.
double copy_bandwidth(std::size_t bytes, int iterations);

} // namespace kvscope::kernels::cuda

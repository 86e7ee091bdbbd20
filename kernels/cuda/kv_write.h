// Writing tokens' K and V into their slots of a device KV pool.
#pragma once

#include <cstdint>

#include "kernels/cpu/paged_kv.h"
#include "kernels/cuda/cuda_error.h"

namespace kvscope::kernels::cuda {

// n_tokens tokens' K and V, all in device memory.
struct KvWriteBatch {
    const float* k = nullptr; // n_tokens x n_kv_heads x head_dim
    const float* v = nullptr;
    // Per token: block * block_size + slot, the physical slot it goes to
    // (vLLM's slot mapping). The engine builds it from block tables it has
    // checked on the host; a slot outside the pool is skipped, not written.
    const std::uint32_t* slots = nullptr;
    std::uint32_t n_tokens = 0;
};

// The CUDA twin of cpu::write_kv for a batch of tokens: `kv` describes one
// layer exactly as on the CPU (same KvLayout, same bytes), but kv.pool and
// kv.fixed_scales are device pointers. Quantizes on the fly to f16, bf16,
// fp8-e4m3, int8 or int4 with codes and scales byte-identical to the CPU
// writer's; f32 is stored as is.
//
// Requires head_dim <= 256 (one warp writes a row). Throws
// std::invalid_argument for a bad description (cpu::check_paged_kv), a
// KIVI format (not on the GPU yet) or a misaligned pool, CudaError when the
// launch fails.
void write_kv(const cpu::PagedKv& kv, const KvWriteBatch& batch, Stream stream = nullptr);

} // namespace kvscope::kernels::cuda

// Writing tokens' K and V into their slots of a device KV pool.
#pragma once

#include <cstddef>
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
    // KIVI only. Per token, its sequence's f16 tail (KvLayout::tail_bytes(),
    // all layers; a device array of device pointers), and host copies of
    // `slots` and of that array: the writer orders tail writes and block
    // seals by them exactly as the CPU's token-by-token writes would.
    std::byte* const* tails = nullptr;
    const std::uint32_t* host_slots = nullptr;
    std::byte* const* host_tails = nullptr;
};

// The CUDA twin of cpu::write_kv for a batch of tokens: `kv` describes one
// layer exactly as on the CPU (same KvLayout, same bytes), but kv.pool and
// kv.fixed_scales are device pointers. Quantizes on the fly to f16, bf16,
// fp8-e4m3, int8 or int4 with codes and scales byte-identical to the CPU
// writer's; f32 is stored as is. KIVI: each token goes in f16 into its
// sequence's tail, and a token in a block's last slot seals the block
// (keys per channel, values per token), as cpu::write_kv does.
//
// Requires head_dim a multiple of 8 and at most 256 (one warp writes a
// row). Throws std::invalid_argument for a bad description
// (cpu::check_paged_kv), a misaligned pool or a KIVI batch without its
// tails, CudaError when a launch fails.
void write_kv(const cpu::PagedKv& kv, const KvWriteBatch& batch, Stream stream = nullptr);

} // namespace kvscope::kernels::cuda

// Attention that reads K and V through a sequence's block table, as vLLM's
// paged attention does: no contiguous copy of the cache is ever made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/paged_kv.h"

namespace kvscope::kernels::cpu {

// Floats of scratch paged_attention needs for a context of ctx_len tokens:
// a score row and an accumulator per thread (num_threads() at the time of
// the call, parallel.h).
std::size_t paged_attention_scratch_floats(std::uint32_t ctx_len, std::uint32_t head_dim);

// Causal attention of one sequence, one layer.
//
// The n_q queries are the sequence's tokens at positions
// [ctx_len - n_q, ctx_len): n_q = 1 is a decode step, n_q > 1 a prefill
// chunk after ctx_len - n_q cached tokens. Their K and V must already be
// written (write_kv). Position p's K/V row is in physical block
// block_table[p / block_size], slot p % block_size.
//
// q and out: n_q x n_heads x head_dim floats, row-major (out may not alias
// q). Query head h reads KV head h / (n_heads / n_kv_heads) (grouped-query
// attention). Scores are scaled by 1 / sqrt(head_dim).
//
// Work is split over (query, head) pairs across num_threads() threads.
// Throws std::invalid_argument for a bad description, n_heads not a
// multiple of n_kv_heads, n_q > ctx_len, a block table shorter than
// ctx_len needs or naming a block outside the pool, or scratch smaller
// than paged_attention_scratch_floats(ctx_len, head_dim).
void paged_attention(const PagedKv& kv, std::span<const std::uint32_t> block_table,
                     std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                     std::uint32_t n_heads, float* out, std::span<float> scratch);

} // namespace kvscope::kernels::cpu

// Paged attention on the GPU: decode and prefill queries of a whole batch
// of sequences in one launch, reading K/V through block tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/cpu/paged_kv.h"
#include "kernels/cuda/cuda_error.h"

namespace kvscope::kernels::cuda {

// The queries of one step, flattened over sequences as vLLM does: a decode
// step has one query per sequence (at position ctx_len - 1), a prefill
// chunk n_q queries of one sequence (at ctx_len - n_q ... ctx_len - 1), and
// both may share a batch. Query i attends causally to positions
// [0, position[i]] of sequence seq[i]. Pointers are device memory.
struct AttentionBatch {
    const float* q = nullptr; // n_queries x n_heads x head_dim
    float* out = nullptr;     // same shape; may not alias q
    std::uint32_t n_queries = 0;
    std::uint32_t n_heads = 0;
    const std::uint32_t* seq = nullptr;      // per query: its row of block_tables
    const std::uint32_t* position = nullptr; // per query: its position in the sequence
    std::uint32_t max_context = 0;           // host-side: max over queries of position + 1
    // Row-major, table_stride entries per sequence: position p of sequence s
    // is in physical block block_tables[s * table_stride + p / block_size],
    // slot p % block_size. nullptr = contiguous allocation: sequence s owns
    // blocks [s * table_stride, (s + 1) * table_stride) in order, with no
    // table to look up (what `bench` compares paging against).
    const std::uint32_t* block_tables = nullptr;
    std::uint32_t table_stride = 0;
    // KIVI only, per sequence: its f16 tail (device pointers in a device
    // array) and its context length. As in cpu::paged_attention, positions
    // from seq_context / block_size * block_size on are read from the tail.
    const std::byte* const* tails = nullptr;
    const std::uint32_t* seq_context = nullptr;
};

// Device scratch the call needs, in bytes (0 when no query's context is
// split): partial results of the context splits, FlashDecoding-style.
std::size_t attention_workspace_bytes(const cpu::PagedKv& kv, const AttentionBatch& batch);

// The CUDA twin of cpu::paged_attention, for a whole batch: scores scaled
// by 1/sqrt(head_dim), query head h reads KV head h / (n_heads /
// n_kv_heads), quantized rows decoded inside the dot products. `kv` is the
// CPU's description of the layer (same KvLayout, same bytes) with device
// pointers in kv.pool and kv.fixed_scales.
//
// Long contexts are cut into splits of up to 512 positions, each a thread
// block of its own; a second kernel merges the splits' softmax partials
// (FlashDecoding). A prefill chunk is computed query by query: correct and
// causal, but each query streams its context again (a tiled tensor-core
// prefill is future work).
//
// Requires head_dim a multiple of 8 and at most 256. The device arrays
// (seq, position, block_tables, KIVI's tails and seq_context) are trusted:
// check them on the host with check_attention_batch before uploading.
// Throws std::invalid_argument for a bad description, a KIVI batch without
// tails, a too-small workspace; CudaError when a launch fails.
void paged_attention(const cpu::PagedKv& kv, const AttentionBatch& batch, void* workspace,
                     std::size_t workspace_bytes, Stream stream = nullptr);

// Host-side check of the metadata a batch will upload: every query's
// sequence below n_seqs, its position below max_context and below what the
// table holds, and every table entry a query can reach below kv.n_blocks
// (or, without a table, the contiguous range inside the pool). Throws
// std::invalid_argument naming the first bad entry.
// An empty block_tables means contiguous allocation.
void check_attention_batch(const cpu::PagedKv& kv, const std::vector<std::uint32_t>& seq,
                           const std::vector<std::uint32_t>& position, std::uint32_t max_context,
                           const std::vector<std::uint32_t>& block_tables, std::uint32_t table_stride,
                           std::uint32_t n_seqs);

} // namespace kvscope::kernels::cuda

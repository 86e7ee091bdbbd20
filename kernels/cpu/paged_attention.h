// Attention that reads K and V through a sequence's block table, as vLLM's
// paged attention does: no contiguous copy of the cache is ever made, and
// quantized rows are decoded on the fly (inside a decode step's dot
// products; a prompt chunk's tiles decode 32 positions at a time into
// their scratch, once for up to 32 query rows).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu/paged_kv.h"

namespace kvscope::kernels::cpu {

// Floats of scratch paged_attention needs for a context of ctx_len tokens
// on `threads` threads (the count the call will be given), decode step or
// prompt chunk: per thread the larger of a decode span's score row for
// each of up to 4 query heads that share a KV head's decoded rows, and a
// prompt tile's buffers (prompt_attention.h: its
// queries, a chunk of decoded rows, scores and accumulators for 32 query
// rows; 29 KiB at head_dim 64, 53 KiB at 128).
std::size_t paged_attention_scratch_floats(std::uint32_t ctx_len, std::uint32_t head_dim, int threads);

// How scores are formed and which keys a query sees; the defaults are
// plain causal attention scaled by 1 / sqrt(head_dim).
struct AttentionOptions {
    // Multiplies q . k; 0 means 1 / sqrt(head_dim). Finite and >= 0.
    float scale = 0.0f;
    // > 0: score = softcap * tanh(score / softcap) after scaling, before
    // the softmax (Gemma 2), computed as llama.cpp's flash attention does:
    // softcap * tanh(q . k * (scale / softcap)). Finite and >= 0.
    float softcap = 0.0f;
    // > 0: the query at position p sees only the keys k with
    // p - k < window (a sliding window, masked as llama.cpp's
    // LLAMA_SWA_TYPE_STANDARD: masked when p - k >= window); keys before
    // the window are skipped, not read. 0: every key k <= p.
    std::uint32_t window = 0;
    // Attention sinks (gpt-oss's attn_sinks; llama.cpp's
    // ggml_soft_max_add_sinks and flash_attn_ext_add_sinks): n_heads
    // logits, one per query head h, each finite, that join head h's
    // softmax denominator with no value:
    //   out_h = sum_j exp(s_j - M) v_j / (exp(sinks[h] - M) + sum_j exp(s_j - M)),
    // M the largest of the scores s_j (after scale and soft cap) and
    // sinks[h]: the weights of the values sum to less than 1 (a head may
    // attend to "nothing"). A sink is neither scaled nor capped. nullptr:
    // no sinks.
    // Every query sees at least its own key, so no row has all its keys
    // masked; were one to, its sum over j would be empty and, with a sink,
    // its output 0 (M = sinks[h], the denominator exp(0) = 1).
    const float* sinks = nullptr;
};

// Causal attention of one sequence, one layer.
//
// The n_q queries are the sequence's tokens at positions
// [ctx_len - n_q, ctx_len): n_q = 1 is a decode step, n_q > 1 a prefill
// chunk after ctx_len - n_q cached tokens. Their K and V must already be
// written (write_kv). Position p's K/V row is in physical block
// block_table[p / block_size], slot p % block_size. KIVI formats: the
// positions from (ctx_len / block_size) * block_size on are read from the
// sequence's f16 tail (`tail`, as write_kv filled it), not from the pool.
//
// q and out: n_q x n_heads x head_dim floats, row-major (out may not alias
// q). Query head h reads KV head h / (n_heads / n_kv_heads) (grouped-query
// attention). Scores are formed and keys masked as `options` say
// (AttentionOptions; by default scaled by 1 / sqrt(head_dim), all keys up
// to the query's position).
//
// A decode step (n_q = 1) is split across `threads` threads (at least 1;
// the caller's own count, see parallel.h) over spans of about 32
// positions (whole blocks) of the context, from the first position the
// window lets the query see (the first span cut at it). A span is computed whole by
// one thread, every head in turn, so that it reads each block's K and V
// regions front to back; grouped-query heads read and decode each K/V row
// once between them. Each span leaves per query head its softmax's max,
// sum and weighted V sum, which are then merged (FlashDecoding's split
// of the context; a sink joins once, at the merge); spans depend on the
// pool's block size alone. A prompt chunk (n_q > 1) is computed in tiles of up to 32
// query rows (consecutive queries x the query heads of a KV head) that
// decode each K/V row once per tile (prompt_attention.h), from the first
// position any of the tile's queries sees, split over
// (KV head, query tile). Either way each piece of work is computed whole
// by one thread: results do not depend on `threads`. A prompt chunk's
// outputs are not bit-identical to per-token decode steps (its softmax
// adds in another order), only as close to exact.
// Throws std::invalid_argument for a bad description, n_heads not a
// multiple of n_kv_heads, n_q > ctx_len, a block table shorter than
// ctx_len needs or naming a block outside the pool (entries wholly before
// the earliest query's window are not read and not checked: a sliding
// window's freed blocks), scratch smaller
// than paged_attention_scratch_floats(ctx_len, head_dim, threads), a KIVI
// context with a partial last block and no tail, or a scale or softcap
// that is negative or not finite, or a sink that is not finite.
void paged_attention(const PagedKv& kv, std::span<const std::uint32_t> block_table,
                     std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                     std::uint32_t n_heads, float* out, std::span<float> scratch, int threads,
                     const std::byte* tail = nullptr, const AttentionOptions& options = {});

// One sequence's decode step in a batch: paged_attention's arguments for
// n_q = 1 (q and out: n_heads x head_dim floats each).
struct DecodeSeq {
    std::span<const std::uint32_t> block_table;
    std::uint32_t ctx_len = 0;
    const float* q = nullptr;
    float* out = nullptr;
    const std::byte* tail = nullptr; // KIVI: the sequence's tail
};

// The decode steps of several sequences of one layer in one parallel loop
// over (sequence, span of its context), longest contexts first, and one
// that merges the spans: two hand-offs to the threads per layer, not two
// per sequence. Each sequence's output is bit-identical to
// paged_attention's for it alone (the same code computes each span and
// each merge whole on one thread), whatever the batch and `threads`. Outputs may not overlap each other or
// any query. Scratch: paged_attention_scratch_floats(the longest ctx_len,
// head_dim, threads). `options` apply to every sequence (one layer's).
// Throws std::invalid_argument as paged_attention does for any of the
// sequences, before computing anything.
void paged_attention_decode_batch(const PagedKv& kv, std::span<const DecodeSeq> seqs, std::uint32_t n_heads,
                                  std::span<float> scratch, int threads, const AttentionOptions& options = {});

// The same kernel for a sequence held in consecutive blocks from block 0
// on: position p is in block p / block_size itself, with no table to look
// up (the contiguous allocation of pre-vLLM servers). It exists so that
// `kvscope-cli bench attention` can time the block-table indirection
// against identical data and identical arithmetic.
void contiguous_attention(const PagedKv& kv, std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                          std::uint32_t n_heads, float* out, std::span<float> scratch, int threads,
                          const std::byte* tail = nullptr, const AttentionOptions& options = {});

} // namespace kvscope::kernels::cpu

// Internal to paged_attention: causal attention for a prompt chunk (n_q > 1
// queries), computed in tiles as FlashAttention does. A tile is up to
// kTileRows query rows of one KV head (consecutive query positions x the
// query heads that share the KV head); it walks the sequence's keys up to
// its last query's position in chunks of the positions between multiples
// of kPromptChunk (from the first position any of its queries sees, with a
// sliding window, to the next multiple): each
// chunk's K rows decoded once to floats, the scores of every row of the
// tile against them in one small matrix product, the soft cap if any, the
// causal (and window) mask on the chunks that need it, an online softmax step (running max and sum per row,
// the accumulators rescaled when the max grows), then the V rows decoded
// once and added into every row's accumulator in a second product. A
// decode step re-reads and re-decodes every K/V row per query; a tile does
// so once per kTileRows rows.
//
// Chunks end at multiples of kPromptChunk whatever the tile, so each row's
// keys are added in the same groups whichever tile (and prompt chunk of
// the engine's) holds its query: a row's outputs are the same bits however
// the prompt was split, as long as the rows it sees hold the same values.
// Keys a row does not see count for nothing (a score of 0, no change to
// its max), including a whole chunk before its window. A sink joins each
// row's denominator once, after its last chunk, rescaled to the larger of
// the row's max and the sink: where the prompt is cut changes nothing there
// either.
//
// Depends on parallel_for.h and simd_path.h only: rows arrive decoded
// through PromptRows, which paged_attention.cpp implements with
// kv_row_ops.h's decoders over the block table and the KIVI tail.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu::detail {

// Query rows per tile, and key positions per chunk: a tile's transposed
// queries, scores and accumulators and a chunk's decoded rows stay in the
// L1/L2 caches (29 KiB at head_dim 64, 53 KiB at 128).
constexpr std::size_t kTileRows = 32;
constexpr std::size_t kPromptChunk = 32;
static_assert(kTileRows <= kPromptChunk, "a tile's queries must lie within one chunk's positions (PromptOps)");

// Floats rounded up to whole 64-byte cache lines: each thread's scratch,
// and each region of it, starts on its own line.
constexpr std::size_t round_to_line(std::size_t floats) { return (floats + 15) / 16 * 16; }

// The first key position a query at `position` sees: with a sliding
// window (> 0) the key k is hidden when position - k >= window.
constexpr std::uint32_t first_visible_key(std::uint32_t position, std::uint32_t window) {
    return window > 0 && position >= window ? position + 1 - window : 0;
}

// A sequence's K and V rows of one layer, decoded on demand.
class PromptRows {
public:
    // Positions [first, first + count) of KV head kv_head's K rows (keys)
    // or V rows, as floats: position first + r at out + r * stride.
    virtual void decode(bool keys, std::uint32_t kv_head, std::uint32_t first, std::uint32_t count, float* out,
                        std::size_t stride) const = 0;

protected:
    ~PromptRows() = default;
};

// The chunk's shape and how its scores are formed (paged_attention.h's
// AttentionOptions, resolved).
struct PromptShape {
    std::uint32_t n_kv_heads, n_heads, head_dim;
    std::uint32_t ctx_len, n_q; // queries at positions [ctx_len - n_q, ctx_len)
    float q_scale;              // multiplies each query before q . k
    float softcap;              // > 0: each score s then becomes softcap * tanh(s)
    std::uint32_t window;       // > 0: query p sees only keys k with p - k < window
    const float* sinks;         // non-null: n_heads logits, one more term of each head's denominator
};

// Floats of scratch one thread's tiles need.
std::size_t prompt_attention_floats(std::uint32_t head_dim);

// q and out as paged_attention's. Thread t uses scratch + t * per_thread
// (per_thread >= prompt_attention_floats(head_dim)). Work is split over
// (KV head, part of its query heads, query tile) items, each computed
// whole by one thread: results do not depend on `threads`.
void prompt_attention(const PromptRows& rows, const PromptShape& s, const float* q, float* out, float* scratch,
                      std::size_t per_thread, int threads);

// The arithmetic of a tile, per SIMD path.
struct PromptOps {
    // c[i * ldc + j] = (add ? c[i * ldc + j] : 0) + the sum over k < depth
    // of a[i * a_row + k * a_depth] * b[k * ldb + j], for i < rows, j <
    // cols (a multiple of 8); depth >= 1.
    void (*product)(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb,
                    float* c, std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t depth, bool add);
    // One online softmax step over a chunk's scores, held key-major:
    // s[k * ld + j] for keys k < keys and query rows j < cols (a multiple
    // of 8). Per row j: new max = max(max[j], its scores); alpha[j] =
    // exp(old max - new max); each score becomes exp(score - new max);
    // sum[j] = sum[j] * alpha[j] + the new scores. A score of -inf (masked)
    // becomes 0. A row whose max is still -inf (every key so far masked:
    // with a sliding window, a chunk before the row's window starts) gets
    // scores 0, alpha 0 and sum 0 rather than exp(-inf - -inf) = NaN.
    void (*softmax_step)(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float* max, float* sum,
                         float* alpha);
    // Soft capping: s[k * ld + j] = softcap * tanh(s[k * ld + j]) for k <
    // keys, j < cols (a multiple of 8).
    void (*cap)(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float softcap);
};

PromptOps prompt_ops(SimdPath path);
#if defined(KVSCOPE_KERNELS_AVX2)
PromptOps avx2_prompt_ops();
#endif
#if defined(KVSCOPE_KERNELS_NEON)
PromptOps neon_prompt_ops();
#endif

} // namespace kvscope::kernels::cpu::detail

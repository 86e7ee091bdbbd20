#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/kv_row_ops.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/prompt_attention.h"

namespace kvscope::kernels::cpu {
namespace {

// Decode: a score row for each head sharing a KV row (a span's, at most
// the context's); a prompt chunk: a tile's buffers (prompt_attention.h). A
// call is either, and the caller sizes scratch without saying which.
std::size_t per_thread_floats(std::uint32_t ctx_len, std::uint32_t head_dim) {
    return std::max(detail::kSharedHeads * detail::round_to_line(ctx_len), detail::prompt_attention_floats(head_dim));
}

// Below this many multiply-adds a call is over before threads would pay off.
constexpr std::size_t kParallelMinWork = 32 * 1024;

void fail(const std::string& what) { throw std::invalid_argument("paged_attention: " + what); }

std::size_t blocks_for(const PagedKv& kv, std::uint32_t ctx_len) {
    return (std::size_t{ctx_len} + kv.block_size - 1) / kv.block_size;
}

void check_heads(const PagedKv& kv, std::uint32_t n_heads) {
    if (n_heads == 0 || n_heads % kv.n_kv_heads != 0)
        fail(std::to_string(n_heads) + " query heads are not a multiple of " +
             std::to_string(kv.n_kv_heads) + " KV heads");
}

// What one sequence's call needs besides its block table.
void check_sequence(const PagedKv& kv, std::uint32_t ctx_len, const float* q, std::uint32_t n_q, const float* out,
                    const std::byte* tail) {
    if (n_q > ctx_len)
        fail(std::to_string(n_q) + " queries but a context of only " + std::to_string(ctx_len));
    if (n_q > 0 && (q == nullptr || out == nullptr))
        fail("null query or output");
    if (kv_elem_seals_blocks(kv.elem) && ctx_len % kv.block_size != 0 && tail == nullptr)
        fail("a KIVI context with a partial last block needs the sequence's tail");
}

void check_scratch(const PagedKv& kv, std::uint32_t ctx_len, std::span<float> scratch, int threads) {
    const std::size_t needed = paged_attention_scratch_floats(ctx_len, kv.head_dim, threads);
    if (scratch.size() < needed)
        fail("scratch of " + std::to_string(scratch.size()) + " floats, needs " +
             std::to_string(needed));
}

void check_options(const AttentionOptions& options, std::uint32_t n_heads) {
    const auto valid = [](float x) { return std::isfinite(x) && x >= 0.0f; };
    if (!valid(options.scale))
        fail("scale " + std::to_string(options.scale) + " is not a finite number >= 0");
    if (!valid(options.softcap))
        fail("softcap " + std::to_string(options.softcap) + " is not a finite number >= 0");
    if (options.sinks != nullptr)
        for (std::uint32_t h = 0; h < n_heads; ++h)
            if (!std::isfinite(options.sinks[h]))
                fail("the sink of query head " + std::to_string(h) + " is " + std::to_string(options.sinks[h]) +
                     ", not finite");
}

void check_args(const PagedKv& kv, std::uint32_t ctx_len, const float* q, std::uint32_t n_q, std::uint32_t n_heads,
                const float* out, std::span<float> scratch, int threads, const std::byte* tail,
                const AttentionOptions& options) {
    check_paged_kv(kv);
    check_heads(kv, n_heads);
    check_sequence(kv, ctx_len, q, n_q, out, tail);
    check_scratch(kv, ctx_len, scratch, threads);
    check_options(options, n_heads);
}

// Entries before the first block the earliest query's window sees are
// never read, so they may name no block (a window freed them).
void check_table(const PagedKv& kv, std::span<const std::uint32_t> block_table, std::uint32_t ctx_len,
                 std::uint32_t n_q, std::uint32_t window) {
    const std::size_t blocks = blocks_for(kv, ctx_len);
    if (block_table.size() < blocks)
        fail("a context of " + std::to_string(ctx_len) + " tokens needs " + std::to_string(blocks) +
             " blocks, the table has " + std::to_string(block_table.size()));
    const std::uint32_t first_query = ctx_len - n_q;
    const std::uint32_t first_seen = window > 0 && first_query >= window ? first_query - window + 1 : 0;
    for (std::size_t b = first_seen / kv.block_size; b < blocks; ++b)
        if (block_table[b] >= kv.n_blocks)
            fail("block table entry " + std::to_string(b) + " is block " +
                 std::to_string(block_table[b]) + " of a pool of " + std::to_string(kv.n_blocks));
}

// Where a logical block of the sequence lives: through a block table
// (paged) or at the same index (contiguous). The only difference between
// the two kernels.
struct TableBlocks {
    const std::uint32_t* table;
    std::size_t operator()(std::uint32_t b) const { return table[b]; }
};

struct ConsecutiveBlocks {
    std::size_t operator()(std::uint32_t b) const { return b; }
};

// AttentionOptions resolved for a head size: a score is q . k * multiplier,
// then, with a soft cap, softcap * tanh of that (the multiplier then
// includes the 1 / softcap, as llama.cpp's flash attention computes it);
// the window and the sinks as the options say.
struct ScoreRule {
    float multiplier;
    float softcap;
    std::uint32_t window;
    const float* sinks;
};

ScoreRule score_rule(const AttentionOptions& options, std::uint32_t head_dim) {
    const float scale = options.scale > 0.0f ? options.scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
    return {options.softcap > 0.0f ? scale / options.softcap : scale, options.softcap, options.window,
            options.sinks};
}

// One of K or V of this layer: where its rows and scales are and how they
// decode.
struct KvPart {
    std::size_t offset;
    KvScaleRegion scale;
    const float* fixed_scales; // fp8: this part's per-head scales
    std::size_t tail_offset;
    detail::KvRowOps ops;
};

// What one call reads: the layer, its K and V parts, the sequence's tail
// and how far its sealed (pool) positions go; and how it scores them.
template <typename Blocks>
struct Source {
    const PagedKv& kv;
    Blocks blocks;
    KvPart k, v;
    const std::byte* tail;
    detail::KvRowOps tail_ops;
    std::uint32_t sealed; // positions below it are in the pool, the rest in the tail
    detail::SoftmaxRowFn softmax;
    ScoreRule rule;
};

// Asks for `bytes` from `p` on to be brought into the cache. A head's rows
// of one block are one contiguous run (and its scales another), but blocks
// lie anywhere in the pool: the hardware prefetcher finds each run only
// after its first misses.
void prefetch(const std::byte* p, std::size_t bytes) {
    for (std::size_t line = 0; line < bytes; line += 64)
        __builtin_prefetch(p + line);
}

// Calls f(first position, rows, ops) for positions [from, to) of one KV
// head, once per run of consecutive rows: each block of the pool (or the
// part of it in range) up to `sealed`, then the tail.
template <typename Blocks, typename F>
void for_each_run(const Source<Blocks>& src, const KvPart& part, std::uint32_t kv_head, std::uint32_t from,
                  std::uint32_t to, F&& f) {
    const PagedKv& kv = src.kv;
    const std::size_t head = part.offset + kv_head * kv.head_stride;
    const std::byte* fixed = part.fixed_scales ? reinterpret_cast<const std::byte*>(part.fixed_scales + kv_head) : nullptr;
    const std::size_t scale_head = part.scale.offset + kv_head * part.scale.head_stride;
    const std::size_t scale_step = fixed ? 0 : part.scale.slot_stride;
    const std::uint32_t pooled = std::min(to, src.sealed);
    for (std::uint32_t first = from; first < pooled;) {
        const std::uint32_t b = first / kv.block_size, slot = first % kv.block_size;
        const std::byte* block = kv.pool + src.blocks(b) * kv.bytes_per_block;
        const std::uint32_t slots = std::min(kv.block_size - slot, pooled - first);
        const std::uint32_t next_first = first + slots;
        if (next_first < pooled) { // the next block's rows and scales while this one is worked on
            const std::byte* next = kv.pool + src.blocks(b + 1) * kv.bytes_per_block;
            prefetch(next + head, std::min(kv.block_size, pooled - next_first) * kv.slot_stride);
            if (!fixed)
                prefetch(next + scale_head, part.scale.head_stride);
        }
        f(first,
          detail::KvRows{block + head + slot * kv.slot_stride, kv.slot_stride,
                         fixed ? fixed : block + scale_head + slot * scale_step, scale_step, slots},
          part.ops);
        first = next_first;
    }
    const std::uint32_t tailed = std::max(from, pooled);
    if (tailed >= to)
        return;
    const std::byte* tail_rows = src.tail + part.tail_offset + kv_head * kv.tail.head_stride;
    f(tailed, detail::KvRows{tail_rows + (tailed - src.sealed) * kv.tail.slot_stride, kv.tail.slot_stride, nullptr, 0,
                             to - tailed},
      src.tail_ops);
}

// The prompt kernel's view of the same rows.
template <typename Blocks>
class SourceRows final : public detail::PromptRows {
public:
    explicit SourceRows(const Source<Blocks>& src) : src_(src) {}
    void decode(bool keys, std::uint32_t kv_head, std::uint32_t first, std::uint32_t count, float* out,
                std::size_t stride) const override {
        for_each_run(src_, keys ? src_.k : src_.v, kv_head, first, first + count,
                     [&](std::uint32_t p, const detail::KvRows& rows, const detail::KvRowOps& ops) {
                         ops.decode(rows, src_.kv.head_dim, out + (p - first) * stride, stride);
                     });
    }

private:
    const Source<Blocks>& src_;
};

// What one span of a sequence's context leaves for each query head h: the
// largest scaled score max[h], the sum of the span's softmax numerators
// exp(score - max[h]) in sum[h], and their weighted sum of V rows (not yet
// divided by anything) at acc + h * head_dim.
struct SpanResult {
    float* max;
    float* sum;
    float* acc;
};

// A decode step over positions [from, to) of the context, for every query
// head, a KV head at a time: its scores against the span's K rows, then
// their softmax numerators against its V rows, each row decoded once for
// up to kSharedHeads query heads. A block holds one layer's K rows of all
// KV heads side by side (kv_layout.h), so walking the heads of a span in
// order reads its blocks' K (and V) regions front to back. `scores` has
// room for kSharedHeads rows of `stride` floats (to - from rounded up to
// 8: softmax_row's room).
template <typename Blocks>
void attend_span(const Source<Blocks>& src, std::uint32_t from, std::uint32_t to, std::uint32_t n_heads,
                 const float* q, float* scores, std::size_t stride, const SpanResult& out) {
    const PagedKv& kv = src.kv;
    const std::size_t dim = kv.head_dim, group = n_heads / kv.n_kv_heads;
    for (std::uint32_t kv_head = 0; kv_head < kv.n_kv_heads; ++kv_head)
        for (std::size_t first = 0; first < group; first += detail::kSharedHeads) {
            const std::size_t heads = std::min(detail::kSharedHeads, group - first);
            const std::size_t head = kv_head * group + first;
            for_each_run(src, src.k, kv_head, from, to,
                         [&](std::uint32_t p, const detail::KvRows& k, const detail::KvRowOps& ops) {
                             ops.dot[heads - 1](q + head * dim, k, dim, scores + (p - from), stride);
                         });
            for (std::size_t h = 0; h < heads; ++h)
                out.sum[head + h] = src.softmax(scores + h * stride, to - from, src.rule.multiplier, src.rule.softcap,
                                                out.max + head + h);
            float* acc = out.acc + head * dim;
            std::fill(acc, acc + heads * dim, 0.0f);
            for_each_run(src, src.v, kv_head, from, to,
                         [&](std::uint32_t p, const detail::KvRows& v, const detail::KvRowOps& ops) {
                             ops.axpy[heads - 1](scores + (p - from), stride, v, acc, dim);
                         });
        }
}

// One query head's output from its spans' results (`spans` of them, the
// i-th at max[i * step], sum[i * step] and acc + i * step): FlashDecoding's
// merge, each span's share rescaled to the largest max. One span and no
// sink: acc / sum. A sink (`sink` non-null) is one more term of the
// denominator, exp(*sink - the largest max), added here once for all spans.
void merge_spans(std::size_t spans, std::size_t step, const float* max, const float* sum, const float* acc,
                 std::size_t dim, const float* sink, float* out) {
    float top = max[0];
    for (std::size_t i = 1; i < spans; ++i)
        top = std::max(top, max[i * step]);
    if (sink != nullptr)
        top = std::max(top, *sink);
    float total = sink != nullptr ? std::exp(*sink - top) : 0.0f;
    std::fill(out, out + dim, 0.0f);
    for (std::size_t i = 0; i < spans; ++i) {
        const float weight = spans == 1 && sink == nullptr ? 1.0f : std::exp(max[i * step] - top);
        total += weight * sum[i * step];
        const float* a = acc + i * step;
        for (std::size_t d = 0; d < dim; ++d)
            out[d] += weight * a[d];
    }
    const float inverse = 1.0f / total;
    for (std::size_t d = 0; d < dim; ++d)
        out[d] *= inverse;
}

// Threads worth using for `work` multiply-adds.
int threads_for(std::size_t work, int threads) { return work >= kParallelMinWork ? threads : 1; }

template <typename Blocks>
Source<Blocks> make_source(const PagedKv& kv, Blocks blocks, std::uint32_t ctx_len, const std::byte* tail,
                           const AttentionOptions& options) {
    const SimdPath path = simd_path();
    const bool fp8 = kv.elem == KvElem::Fp8E4M3;
    return {
        kv,
        blocks,
        {kv.k_offset, kv.k_scale, fp8 ? kv.fixed_scales : nullptr, kv.tail.k_offset,
         detail::kv_row_ops(detail::k_row_code(kv.elem), path)},
        {kv.v_offset, kv.v_scale, fp8 ? kv.fixed_scales + kv.n_kv_heads : nullptr, kv.tail.v_offset,
         detail::kv_row_ops(detail::v_row_code(kv.elem), path)},
        tail,
        detail::kv_row_ops(detail::RowCode::F16, path),
        kv_elem_seals_blocks(kv.elem) ? ctx_len / kv.block_size * kv.block_size : ctx_len,
        detail::softmax_row(path),
        score_rule(options, kv.head_dim),
    };
}

// One sequence's decode step: what it reads, its query and its output.
template <typename Blocks>
struct DecodeJob {
    Source<Blocks> src;
    std::uint32_t ctx_len;
    const float* q;
    float* out;

    // The keys its query (at ctx_len - 1) sees: [first_visible(), ctx_len).
    std::uint32_t first_visible() const { return detail::first_visible_key(ctx_len - 1, src.rule.window); }
    std::uint32_t visible() const { return ctx_len - first_visible(); }
};

// Positions per decode span: whole blocks, about kDecodeSpan positions.
// Spans are what a decode step hands to threads, so a short context still
// gives a few items; their size depends on the pool alone, so a sequence's
// result does not depend on the batch it is decoded in.
constexpr std::uint32_t kDecodeSpan = 32;
std::uint32_t decode_span(const PagedKv& kv) {
    return std::max(kv.block_size, kDecodeSpan / kv.block_size * kv.block_size);
}

// The decode steps of one or more sequences: one parallel loop over
// (sequence, span of its visible context), each item every head of its
// span (attend_span), then one over (sequence, query head) that merges the
// spans into the output. Spans lie on a grid of decode_span positions
// from 0; a window's first visible position cuts the first one short.
// Items of the longest visible contexts are handed out first, so that the
// last ones taken are short. A sequence's result does
// not depend on which thread takes which item or on the other sequences.
template <typename Blocks>
void decode(std::span<const DecodeJob<Blocks>> jobs, std::uint32_t n_heads, std::span<float> scratch,
            int threads) {
    if (jobs.empty())
        return;
    const PagedKv& kv = jobs.front().src.kv;
    const std::size_t dim = kv.head_dim;
    const std::uint32_t span = decode_span(kv);
    std::vector<std::uint32_t> order(jobs.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return jobs[a].visible() > jobs[b].visible(); });
    // Item i is the (i - first_item[k])-th visible span of job order[k];
    // each item's results: n_heads maxima, n_heads sums, n_heads
    // accumulators.
    std::vector<std::size_t> first_item(jobs.size() + 1, 0);
    std::size_t work = 0;
    for (std::size_t k = 0; k < jobs.size(); ++k) {
        const DecodeJob<Blocks>& job = jobs[order[k]];
        first_item[k + 1] = first_item[k] + (job.ctx_len + span - 1) / span - job.first_visible() / span;
        work += std::size_t{n_heads} * job.visible() * dim;
    }
    const std::size_t items = first_item.back(), per_item = n_heads * (2 + dim);
    thread_local std::vector<float> reused;
    std::vector<float>& results = reused; // the workers' own thread_local would be another vector
    results.resize(items * per_item);
    const auto result_of = [&](std::size_t item) {
        float* r = results.data() + item * per_item;
        return SpanResult{r, r + n_heads, r + 2 * n_heads};
    };
    std::uint32_t longest = 0; // the scratch's size
    for (const DecodeJob<Blocks>& job : jobs)
        longest = std::max(longest, job.ctx_len);
    const std::size_t per_thread = per_thread_floats(longest, kv.head_dim);
    // A span's scores, per head: at most a span of the longest visible context.
    const std::size_t stride = detail::round_to_line(std::min(span, jobs[order.front()].visible()));
    const int used = threads_for(work, threads);
    detail::parallel_for(items, used, detail::Schedule::Dynamic, [&](std::size_t item, int thread) {
        const std::size_t k = std::upper_bound(first_item.begin(), first_item.end(), item) - first_item.begin() - 1;
        const DecodeJob<Blocks>& job = jobs[order[k]];
        const std::uint32_t visible = job.first_visible();
        const auto grid = static_cast<std::uint32_t>((visible / span + item - first_item[k]) * span);
        const std::uint32_t from = std::max(visible, grid), to = std::min<std::uint32_t>(job.ctx_len, grid + span);
        attend_span(job.src, from, to, n_heads, job.q, scratch.data() + thread * per_thread, stride,
                    result_of(item));
    });
    detail::parallel_for(jobs.size() * n_heads, used, detail::Schedule::Even, [&](std::size_t i, int) {
        const std::size_t k = i / n_heads, h = i % n_heads;
        const DecodeJob<Blocks>& job = jobs[order[k]];
        const SpanResult first = result_of(first_item[k]);
        const float* sinks = job.src.rule.sinks;
        merge_spans(first_item[k + 1] - first_item[k], per_item, first.max + h, first.sum + h, first.acc + h * dim,
                    dim, sinks != nullptr ? sinks + h : nullptr, job.out + h * dim);
    });
}

template <typename Blocks>
void run(const PagedKv& kv, Blocks blocks, std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
         std::uint32_t n_heads, float* out, std::span<float> scratch, int threads, const std::byte* tail,
         const AttentionOptions& options) {
    if (n_q == 0)
        return;
    const Source<Blocks> src = make_source(kv, blocks, ctx_len, tail, options);
    if (n_q == 1) {
        const DecodeJob<Blocks> job{src, ctx_len, q, out};
        decode(std::span(&job, 1), n_heads, scratch, threads);
        return;
    }
    const ScoreRule& rule = src.rule;
    const detail::PromptShape shape{kv.n_kv_heads, n_heads,      kv.head_dim, ctx_len,   n_q,
                                    rule.multiplier, rule.softcap, rule.window, rule.sinks};
    const std::size_t keys_per_query = rule.window > 0 ? std::min(ctx_len, rule.window) : ctx_len; // at most
    const int used = threads_for(std::size_t{n_q} * n_heads * keys_per_query * kv.head_dim, threads);
    detail::prompt_attention(SourceRows<Blocks>(src), shape, q, out, scratch.data(),
                             per_thread_floats(ctx_len, kv.head_dim), used);
}

} // namespace

std::size_t paged_attention_scratch_floats(std::uint32_t ctx_len, std::uint32_t head_dim, int threads) {
    return static_cast<std::size_t>(std::max(threads, 1)) * per_thread_floats(ctx_len, head_dim);
}

void paged_attention(const PagedKv& kv, std::span<const std::uint32_t> block_table,
                     std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                     std::uint32_t n_heads, float* out, std::span<float> scratch, int threads,
                     const std::byte* tail, const AttentionOptions& options) {
    check_args(kv, ctx_len, q, n_q, n_heads, out, scratch, threads, tail, options);
    check_table(kv, block_table, ctx_len, n_q, options.window);
    run(kv, TableBlocks{block_table.data()}, ctx_len, q, n_q, n_heads, out, scratch, threads, tail, options);
}

void paged_attention_decode_batch(const PagedKv& kv, std::span<const DecodeSeq> seqs, std::uint32_t n_heads,
                                  std::span<float> scratch, int threads, const AttentionOptions& options) {
    check_paged_kv(kv);
    check_heads(kv, n_heads);
    check_options(options, n_heads);
    std::uint32_t max_ctx = 0;
    std::vector<DecodeJob<TableBlocks>> jobs;
    jobs.reserve(seqs.size());
    for (const DecodeSeq& s : seqs) {
        check_sequence(kv, s.ctx_len, s.q, 1, s.out, s.tail);
        check_table(kv, s.block_table, s.ctx_len, 1, options.window);
        max_ctx = std::max(max_ctx, s.ctx_len);
        jobs.push_back(
            {make_source(kv, TableBlocks{s.block_table.data()}, s.ctx_len, s.tail, options), s.ctx_len, s.q, s.out});
    }
    check_scratch(kv, max_ctx, scratch, threads);
    decode(std::span<const DecodeJob<TableBlocks>>(jobs), n_heads, scratch, threads);
}

void contiguous_attention(const PagedKv& kv, std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                          std::uint32_t n_heads, float* out, std::span<float> scratch, int threads,
                          const std::byte* tail, const AttentionOptions& options) {
    check_args(kv, ctx_len, q, n_q, n_heads, out, scratch, threads, tail, options);
    if (blocks_for(kv, ctx_len) > kv.n_blocks)
        fail("a context of " + std::to_string(ctx_len) + " tokens needs " + std::to_string(blocks_for(kv, ctx_len)) +
             " consecutive blocks, the pool has " + std::to_string(kv.n_blocks));
    run(kv, ConsecutiveBlocks{}, ctx_len, q, n_q, n_heads, out, scratch, threads, tail, options);
}

} // namespace kvscope::kernels::cpu

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

// Decode: a score row and an accumulator for each head sharing a KV row;
// a prompt chunk: a tile's buffers (prompt_attention.h). A call is either,
// and the caller sizes scratch without saying which.
std::size_t per_thread_floats(std::uint32_t ctx_len, std::uint32_t head_dim) {
    return std::max(detail::kSharedHeads * (detail::round_to_line(ctx_len) + detail::round_to_line(head_dim)),
                    detail::prompt_attention_floats(head_dim));
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

void check_args(const PagedKv& kv, std::uint32_t ctx_len, const float* q, std::uint32_t n_q, std::uint32_t n_heads,
                const float* out, std::span<float> scratch, int threads, const std::byte* tail) {
    check_paged_kv(kv);
    check_heads(kv, n_heads);
    check_sequence(kv, ctx_len, q, n_q, out, tail);
    check_scratch(kv, ctx_len, scratch, threads);
}

void check_table(const PagedKv& kv, std::span<const std::uint32_t> block_table, std::uint32_t ctx_len) {
    const std::size_t blocks = blocks_for(kv, ctx_len);
    if (block_table.size() < blocks)
        fail("a context of " + std::to_string(ctx_len) + " tokens needs " + std::to_string(blocks) +
             " blocks, the table has " + std::to_string(block_table.size()));
    for (std::size_t b = 0; b < blocks; ++b)
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
// and how far its sealed (pool) positions go.
template <typename Blocks>
struct Source {
    const PagedKv& kv;
    Blocks blocks;
    KvPart k, v;
    const std::byte* tail;
    detail::KvRowOps tail_ops;
    std::uint32_t sealed; // positions below it are in the pool, the rest in the tail
    detail::SoftmaxRowFn softmax;
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

// `heads` (<= kSharedHeads) query heads of one KV head over positions
// [0, count): scores, softmax, weighted sum of V, each K and V row decoded
// once for all of them, a block's rows in one call. Head h's query is at
// q + h * head_dim, its output at out + h * head_dim; its scores at
// scores + h * stride (count floats rounded up to 8: softmax_row's room),
// its accumulator at acc + h * head_dim.
template <typename Blocks>
void attend(const Source<Blocks>& src, std::uint32_t kv_head, std::uint32_t count, std::size_t heads,
            const float* q, float* scores, std::size_t stride, float* acc, float* out) {
    const std::size_t dim = src.kv.head_dim;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    for_each_run(src, src.k, kv_head, 0, count,
                 [&](std::uint32_t p, const detail::KvRows& k, const detail::KvRowOps& ops) {
                     ops.dot[heads - 1](q, k, dim, scores + p, stride);
                 });
    float inverse[detail::kSharedHeads];
    for (std::size_t h = 0; h < heads; ++h)
        inverse[h] = 1.0f / src.softmax(scores + h * stride, count, scale);
    std::fill(acc, acc + heads * dim, 0.0f);
    for_each_run(src, src.v, kv_head, 0, count,
                 [&](std::uint32_t p, const detail::KvRows& v, const detail::KvRowOps& ops) {
                     ops.axpy[heads - 1](scores + p, stride, v, acc, dim);
                 });
    for (std::size_t h = 0; h < heads; ++h)
        for (std::size_t d = 0; d < dim; ++d)
            out[h * dim + d] = acc[h * dim + d] * inverse[h];
}

// Threads worth using for `work` multiply-adds.
int threads_for(std::size_t work, int threads) { return work >= kParallelMinWork ? threads : 1; }

template <typename Blocks>
Source<Blocks> make_source(const PagedKv& kv, Blocks blocks, std::uint32_t ctx_len, const std::byte* tail) {
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
    };
}

// One sequence's decode step: what it reads, its query and its output.
template <typename Blocks>
struct DecodeJob {
    Source<Blocks> src;
    std::uint32_t ctx_len;
    const float* q;
    float* out;
};

// The decode steps of one or more sequences in one parallel loop over
// (sequence, KV head, up to kSharedHeads of its query heads): one hand-off
// to the threads per layer however many sequences a step decodes. Items
// of the longest contexts are handed out first, so that the last ones
// taken are short. An item's result does not depend on which thread takes
// it or which items share the call.
template <typename Blocks>
void decode(std::span<const DecodeJob<Blocks>> jobs, std::uint32_t n_heads, std::span<float> scratch,
            int threads) {
    if (jobs.empty())
        return;
    const PagedKv& kv = jobs.front().src.kv;
    const std::size_t group = n_heads / kv.n_kv_heads;
    const std::size_t parts = (group + detail::kSharedHeads - 1) / detail::kSharedHeads; // per KV head
    const std::size_t per_job = kv.n_kv_heads * parts;
    const std::size_t dim = kv.head_dim;
    std::vector<std::uint32_t> order(jobs.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return jobs[a].ctx_len > jobs[b].ctx_len; });
    std::size_t work = 0;
    for (const DecodeJob<Blocks>& job : jobs)
        work += std::size_t{n_heads} * job.ctx_len * dim;
    const std::size_t per_thread = per_thread_floats(jobs[order.front()].ctx_len, kv.head_dim);
    const int used = threads_for(work, threads);
    detail::parallel_for(jobs.size() * per_job, used, detail::Schedule::Dynamic, [&](std::size_t item, int thread) {
        const DecodeJob<Blocks>& job = jobs[order[item / per_job]];
        const std::size_t stride = detail::round_to_line(job.ctx_len);
        float* scores = scratch.data() + thread * per_thread;
        float* acc = scores + detail::kSharedHeads * stride;
        const auto kv_head = static_cast<std::uint32_t>(item % per_job / parts);
        const std::size_t first = item % parts * detail::kSharedHeads; // within the group
        const std::size_t heads = std::min(detail::kSharedHeads, group - first);
        const std::size_t row = (kv_head * group + first) * dim;
        attend(job.src, kv_head, job.ctx_len, heads, job.q + row, scores, stride, acc, job.out + row);
    });
}

template <typename Blocks>
void run(const PagedKv& kv, Blocks blocks, std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
         std::uint32_t n_heads, float* out, std::span<float> scratch, int threads, const std::byte* tail) {
    if (n_q == 0)
        return;
    const Source<Blocks> src = make_source(kv, blocks, ctx_len, tail);
    if (n_q == 1) {
        const DecodeJob<Blocks> job{src, ctx_len, q, out};
        decode(std::span(&job, 1), n_heads, scratch, threads);
        return;
    }
    const detail::PromptShape shape{kv.n_kv_heads, n_heads, kv.head_dim, ctx_len, n_q};
    const int used = threads_for(std::size_t{n_q} * n_heads * ctx_len * kv.head_dim, threads);
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
                     const std::byte* tail) {
    check_args(kv, ctx_len, q, n_q, n_heads, out, scratch, threads, tail);
    check_table(kv, block_table, ctx_len);
    run(kv, TableBlocks{block_table.data()}, ctx_len, q, n_q, n_heads, out, scratch, threads, tail);
}

void paged_attention_decode_batch(const PagedKv& kv, std::span<const DecodeSeq> seqs, std::uint32_t n_heads,
                                  std::span<float> scratch, int threads) {
    check_paged_kv(kv);
    check_heads(kv, n_heads);
    std::uint32_t max_ctx = 0;
    std::vector<DecodeJob<TableBlocks>> jobs;
    jobs.reserve(seqs.size());
    for (const DecodeSeq& s : seqs) {
        check_sequence(kv, s.ctx_len, s.q, 1, s.out, s.tail);
        check_table(kv, s.block_table, s.ctx_len);
        max_ctx = std::max(max_ctx, s.ctx_len);
        jobs.push_back({make_source(kv, TableBlocks{s.block_table.data()}, s.ctx_len, s.tail), s.ctx_len, s.q, s.out});
    }
    check_scratch(kv, max_ctx, scratch, threads);
    decode(std::span<const DecodeJob<TableBlocks>>(jobs), n_heads, scratch, threads);
}

void contiguous_attention(const PagedKv& kv, std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                          std::uint32_t n_heads, float* out, std::span<float> scratch, int threads,
                          const std::byte* tail) {
    check_args(kv, ctx_len, q, n_q, n_heads, out, scratch, threads, tail);
    if (blocks_for(kv, ctx_len) > kv.n_blocks)
        fail("a context of " + std::to_string(ctx_len) + " tokens needs " + std::to_string(blocks_for(kv, ctx_len)) +
             " consecutive blocks, the pool has " + std::to_string(kv.n_blocks));
    run(kv, ConsecutiveBlocks{}, ctx_len, q, n_q, n_heads, out, scratch, threads, tail);
}

} // namespace kvscope::kernels::cpu

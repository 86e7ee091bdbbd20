#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cpu/kv_row_ops.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/parallel_for.h"

namespace kvscope::kernels::cpu {
namespace {

// Each thread's scratch starts on its own cache line (16 floats).
std::size_t round_to_line(std::size_t floats) { return (floats + 15) / 16 * 16; }

std::size_t per_thread_floats(std::uint32_t ctx_len, std::uint32_t head_dim) {
    return round_to_line(ctx_len) + round_to_line(head_dim);
}

// Below this many multiply-adds a call is over before threads would pay off.
constexpr std::size_t kParallelMinWork = 32 * 1024;

void fail(const std::string& what) { throw std::invalid_argument("paged_attention: " + what); }

void check_args(const PagedKv& kv, std::span<const std::uint32_t> block_table,
                std::uint32_t ctx_len, const float* q, std::uint32_t n_q, std::uint32_t n_heads,
                const float* out, std::span<float> scratch) {
    check_paged_kv(kv);
    if (n_heads == 0 || n_heads % kv.n_kv_heads != 0)
        fail(std::to_string(n_heads) + " query heads are not a multiple of " +
             std::to_string(kv.n_kv_heads) + " KV heads");
    if (n_q > ctx_len)
        fail(std::to_string(n_q) + " queries but a context of only " + std::to_string(ctx_len));
    if (n_q > 0 && (q == nullptr || out == nullptr))
        fail("null query or output");
    const std::size_t blocks = (std::size_t{ctx_len} + kv.block_size - 1) / kv.block_size;
    if (block_table.size() < blocks)
        fail("a context of " + std::to_string(ctx_len) + " tokens needs " + std::to_string(blocks) +
             " blocks, the table has " + std::to_string(block_table.size()));
    for (std::size_t b = 0; b < blocks; ++b)
        if (block_table[b] >= kv.n_blocks)
            fail("block table entry " + std::to_string(b) + " is block " +
                 std::to_string(block_table[b]) + " of a pool of " + std::to_string(kv.n_blocks));
    const std::size_t needed = paged_attention_scratch_floats(ctx_len, kv.head_dim);
    if (scratch.size() < needed)
        fail("scratch of " + std::to_string(scratch.size()) + " floats, needs " +
             std::to_string(needed));
}

// Calls f(position, row) for positions [0, count) of one KV head, walking
// the block table; region is kv.k_offset or kv.v_offset.
template <typename F>
void for_each_row(const PagedKv& kv, const std::uint32_t* table, std::size_t region,
                  std::uint32_t kv_head, std::uint32_t count, F&& f) {
    const std::size_t head = region + kv_head * kv.head_stride;
    for (std::uint32_t first = 0, b = 0; first < count; first += kv.block_size, ++b) {
        const std::byte* rows = kv.pool + table[b] * kv.bytes_per_block + head;
        const std::uint32_t slots = std::min(kv.block_size, count - first);
        for (std::uint32_t s = 0; s < slots; ++s)
            f(first + s, rows + s * kv.slot_stride);
    }
}

// One query head over positions [0, count): scores, softmax, weighted sum
// of V. scores holds count floats, acc head_dim floats.
void attend(const PagedKv& kv, const detail::KvRowOps& ops, const std::uint32_t* table,
            std::uint32_t kv_head, std::uint32_t count, const float* q, float* scores, float* acc,
            float* out) {
    const std::size_t dim = kv.head_dim;
    const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
    float max = -std::numeric_limits<float>::infinity();
    for_each_row(kv, table, kv.k_offset, kv_head, count, [&](std::uint32_t p, const std::byte* k) {
        scores[p] = ops.dot(q, k, dim) * scale;
        max = std::max(max, scores[p]);
    });
    double sum = 0.0;
    for (std::uint32_t p = 0; p < count; ++p) {
        scores[p] = std::exp(scores[p] - max);
        sum += scores[p];
    }
    std::fill(acc, acc + dim, 0.0f);
    for_each_row(kv, table, kv.v_offset, kv_head, count, [&](std::uint32_t p, const std::byte* v) {
        ops.axpy(scores[p], v, acc, dim);
    });
    const auto inverse = static_cast<float>(1.0 / sum);
    for (std::size_t d = 0; d < dim; ++d)
        out[d] = acc[d] * inverse;
}

} // namespace

std::size_t paged_attention_scratch_floats(std::uint32_t ctx_len, std::uint32_t head_dim) {
    return static_cast<std::size_t>(num_threads()) * per_thread_floats(ctx_len, head_dim);
}

void paged_attention(const PagedKv& kv, std::span<const std::uint32_t> block_table,
                     std::uint32_t ctx_len, const float* q, std::uint32_t n_q,
                     std::uint32_t n_heads, float* out, std::span<float> scratch) {
    check_args(kv, block_table, ctx_len, q, n_q, n_heads, out, scratch);
    if (n_q == 0)
        return;
    const detail::KvRowOps ops = detail::kv_row_ops(kv.elem, simd_path());
    const std::uint32_t group = n_heads / kv.n_kv_heads;
    const std::size_t dim = kv.head_dim;
    const std::size_t per_thread = per_thread_floats(ctx_len, kv.head_dim);
    const std::size_t items = std::size_t{n_q} * n_heads;
    const int threads = items * ctx_len * dim >= kParallelMinWork ? num_threads() : 1;
    // Items are (query, head), query-major; later queries of a prefill chunk
    // see more context, which parallel_for's chunked hand-out evens out.
    detail::parallel_for(items, threads, detail::Schedule::Dynamic, [&](std::size_t item, int thread) {
        float* scores = scratch.data() + thread * per_thread;
        float* acc = scores + round_to_line(ctx_len);
        const auto i = static_cast<std::uint32_t>(item / n_heads);
        const auto h = static_cast<std::uint32_t>(item % n_heads);
        const std::uint32_t count = ctx_len - n_q + i + 1; // causal: up to its own position
        attend(kv, ops, block_table.data(), h / group, count, q + item * dim, scores, acc, out + item * dim);
    });
}

} // namespace kvscope::kernels::cpu

// The prompt kernel's tiles (prompt_attention.h) and its portable
// arithmetic.
#include "kernels/cpu/prompt_attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernels/cpu/parallel_for.h"

namespace kvscope::kernels::cpu::detail {
namespace {

constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

// Vector loads and stores need whole 8-float rows.
std::size_t round_to_8(std::size_t n) { return (n + 7) / 8 * 8; }

void portable_product(const float* a, std::size_t a_row, std::size_t a_depth, const float* b, std::size_t ldb,
                      float* c, std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t depth, bool add) {
    for (std::size_t i = 0; i < rows; ++i) {
        if (!add)
            std::fill(c + i * ldc, c + i * ldc + cols, 0.0f);
        for (std::size_t k = 0; k < depth; ++k) {
            const float x = a[i * a_row + k * a_depth];
            for (std::size_t j = 0; j < cols; ++j)
                c[i * ldc + j] += x * b[k * ldb + j];
        }
    }
}

void portable_softmax_step(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float* max, float* sum,
                           float* alpha) {
    for (std::size_t j = 0; j < cols; ++j) {
        float new_max = max[j];
        for (std::size_t k = 0; k < keys; ++k)
            new_max = std::max(new_max, s[k * ld + j]);
        // Nothing seen yet: shifting by 0 turns every -inf into 0, not NaN.
        const float shift = new_max == kNegativeInfinity ? 0.0f : new_max;
        float added = 0.0f;
        for (std::size_t k = 0; k < keys; ++k) {
            float& score = s[k * ld + j];
            score = std::exp(score - shift);
            added += score;
        }
        alpha[j] = std::exp(max[j] - shift);
        sum[j] = sum[j] * alpha[j] + added;
        max[j] = new_max;
    }
}

void portable_cap(float* s, std::size_t ld, std::size_t keys, std::size_t cols, float softcap) {
    for (std::size_t k = 0; k < keys; ++k)
        for (std::size_t j = 0; j < cols; ++j)
            s[k * ld + j] = softcap * std::tanh(s[k * ld + j]);
}

// One thread's regions of scratch, in this order.
struct TileScratch {
    float* queries; // head_dim x kTileRows: the tile's queries, transposed and scaled
    float* rows;    // kPromptChunk x padded head_dim: a chunk's decoded K, then V, rows
    float* scores;  // kPromptChunk x kTileRows, key-major
    float* acc;     // kTileRows x padded head_dim
    float* max;     // kTileRows each: the online softmax's running max and sum,
    float* sum;
    float* alpha; // and the last step's rescaling
};

// The regions' sizes in floats, each rounded up to a cache line.
std::array<std::size_t, 7> region_floats(std::size_t dim) {
    const std::size_t padded = round_to_8(dim);
    std::array<std::size_t, 7> floats{dim * kTileRows, kPromptChunk * padded, kPromptChunk * kTileRows,
                                      kTileRows * padded, kTileRows, kTileRows, kTileRows};
    for (std::size_t& f : floats)
        f = round_to_line(f);
    return floats;
}

TileScratch carve(float* p, std::size_t dim) {
    TileScratch w{};
    float** regions[] = {&w.queries, &w.rows, &w.scores, &w.acc, &w.max, &w.sum, &w.alpha};
    const std::array<std::size_t, 7> floats = region_floats(dim);
    for (std::size_t r = 0; r < floats.size(); ++r) {
        *regions[r] = p;
        p += floats[r];
    }
    return w;
}

// How a prompt chunk is cut: up to kTileRows rows per tile, the heads of a
// group first (so that they share the decoded rows), then as many
// consecutive queries as fit. A group larger than kTileRows is split into
// parts of one query each.
struct Tiling {
    std::size_t group, heads, parts, queries, query_tiles;
};

Tiling tiling(const PromptShape& s) {
    Tiling t{};
    t.group = s.n_heads / s.n_kv_heads;
    t.heads = std::min(t.group, kTileRows);
    t.parts = (t.group + t.heads - 1) / t.heads;
    t.queries = kTileRows / t.heads;
    t.query_tiles = (s.n_q + t.queries - 1) / t.queries;
    return t;
}

// One tile: query heads [first_head, first_head + heads) of KV head kv_head
// (within its group), queries [first_query, first_query + queries) of the
// chunk. Its rows are query-major: row j is query j / heads, head j % heads.
struct Tile {
    std::uint32_t kv_head;
    std::size_t first_head, heads, first_query, queries;
    std::size_t rows() const { return heads * queries; }
};

// Item i -> its tile, the tiles of the chunk's last queries (which see the
// most keys) first, so that the cheap ones even out the threads' finish.
Tile tile_of(std::size_t item, const PromptShape& s, const Tiling& t) {
    const std::size_t per_query_tile = s.n_kv_heads * t.parts;
    const std::size_t query_tile = t.query_tiles - 1 - item / per_query_tile;
    const std::size_t part = item % per_query_tile % t.parts;
    Tile tile{static_cast<std::uint32_t>(item % per_query_tile / t.parts), part * t.heads,
              std::min(t.heads, t.group - part * t.heads), query_tile * t.queries, 0};
    tile.queries = std::min<std::size_t>(t.queries, s.n_q - tile.first_query);
    return tile;
}

// The query head of the tile's row j.
std::size_t row_head(const PromptShape& s, const Tile& tile, std::size_t j) {
    return tile.kv_head * (s.n_heads / s.n_kv_heads) + tile.first_head + j % tile.heads;
}

// Query row j of the tile, in q or out.
std::size_t row_offset(const PromptShape& s, const Tile& tile, std::size_t j) {
    const std::size_t query = tile.first_query + j / tile.heads;
    return (query * s.n_heads + row_head(s, tile, j)) * s.head_dim;
}

// queries[d * cols + j] = q of row j, value d, times s.q_scale; the
// padding columns [rows, cols) are 0.
void load_queries(const PromptShape& s, const Tile& tile, const float* q, std::size_t cols, float* queries) {
    for (std::size_t j = 0; j < cols; ++j) {
        const float* row = j < tile.rows() ? q + row_offset(s, tile, j) : nullptr;
        for (std::size_t d = 0; d < s.head_dim; ++d)
            queries[d * cols + j] = row ? row[d] * s.q_scale : 0.0f;
    }
}

// The keys a tile's rows see between them: [first, end). Its first query
// (the earliest) sees back to the start of its window, its last up to its
// own position.
struct KeyRange {
    std::size_t first, end;
};

KeyRange visible_keys(const PromptShape& s, std::size_t first_position, std::size_t last_position) {
    return {first_visible_key(static_cast<std::uint32_t>(first_position), s.window), last_position + 1};
}

// Whether any row of the tile must not see some key of [first, first +
// keys): a key after the first query, or one before the last query's window.
bool needs_mask(const PromptShape& s, std::size_t first, std::size_t keys, std::size_t first_position,
                std::size_t last_position) {
    return first + keys - 1 > first_position || (s.window > 0 && last_position - first >= s.window);
}

// Mask of a chunk of keys from position `first` on: row j's query at
// position p = first_position + j / heads sees no key after p and, with a
// window, none at p - window or before.
void mask(float* scores, std::size_t cols, std::size_t first, std::size_t keys, std::size_t first_position,
          const Tile& tile, std::uint32_t window) {
    for (std::size_t k = 0; k < keys; ++k)
        for (std::size_t j = 0; j < tile.rows(); ++j) {
            const std::size_t p = first_position + j / tile.heads, key = first + k;
            if (key > p || (window > 0 && p - key >= window))
                scores[k * cols + j] = kNegativeInfinity;
        }
}

// What row j's accumulator is multiplied by to give its output: 1 / sum,
// or with a sink, the accumulator and sum first rescaled to the larger of
// the row's max and the sink, whose own exp then joins the sum. A row whose
// every key was masked (max -inf, sum and accumulator 0) would give 0
// with a sink, 0 * (1 / 0) = NaN without; no row is: a query sees itself.
float output_scale(const TileScratch& w, std::size_t j, const float* sink) {
    if (sink == nullptr)
        return 1.0f / w.sum[j];
    const float top = std::max(w.max[j], *sink);
    const float kept = std::exp(w.max[j] - top);
    return kept / (w.sum[j] * kept + std::exp(*sink - top));
}

void rescale(float* acc, std::size_t padded, std::size_t rows, const float* alpha) {
    for (std::size_t j = 0; j < rows; ++j)
        if (alpha[j] != 1.0f)
            for (std::size_t d = 0; d < padded; ++d)
                acc[j * padded + d] *= alpha[j];
}

void run_tile(const PromptRows& rows, const PromptShape& s, const PromptOps& ops, const Tile& tile, const float* q,
              float* out, const TileScratch& w) {
    const std::size_t dim = s.head_dim, padded = round_to_8(dim);
    const std::size_t n = tile.rows(), cols = round_to_8(n);
    load_queries(s, tile, q, cols, w.queries);
    std::fill(w.max, w.max + cols, kNegativeInfinity);
    std::fill(w.sum, w.sum + cols, 0.0f);
    // The rows' padding values [dim, padded), which the decoders never
    // write, reach only the accumulators' padding, which is never read;
    // zeros keep garbage (a subnormal's slow arithmetic) out even there.
    for (std::size_t r = 0; r < kPromptChunk; ++r)
        std::fill(w.rows + r * padded + dim, w.rows + (r + 1) * padded, 0.0f);
    const std::size_t first_position = s.ctx_len - s.n_q + tile.first_query;
    const std::size_t last_position = first_position + tile.queries - 1;
    const KeyRange range = visible_keys(s, first_position, last_position);
    for (std::size_t first = range.first; first < range.end; first = (first / kPromptChunk + 1) * kPromptChunk) {
        const std::size_t keys = std::min((first / kPromptChunk + 1) * kPromptChunk, range.end) - first;
        const auto at = static_cast<std::uint32_t>(first), count = static_cast<std::uint32_t>(keys);
        rows.decode(true, tile.kv_head, at, count, w.rows, padded);
        ops.product(w.rows, padded, 1, w.queries, cols, w.scores, cols, keys, cols, dim, false);
        if (s.softcap > 0.0f)
            ops.cap(w.scores, cols, keys, cols, s.softcap);
        if (needs_mask(s, first, keys, first_position, last_position))
            mask(w.scores, cols, first, keys, first_position, tile, s.window);
        ops.softmax_step(w.scores, cols, keys, cols, w.max, w.sum, w.alpha);
        const bool add = first > range.first; // the first chunk's product starts the accumulators
        if (add)
            rescale(w.acc, padded, n, w.alpha);
        rows.decode(false, tile.kv_head, at, count, w.rows, padded);
        ops.product(w.scores, 1, cols, w.rows, padded, w.acc, padded, n, padded, keys, add);
    }
    for (std::size_t j = 0; j < n; ++j) {
        const std::size_t head = row_head(s, tile, j);
        const float scale = output_scale(w, j, s.sinks != nullptr ? s.sinks + head : nullptr);
        float* o = out + row_offset(s, tile, j);
        for (std::size_t d = 0; d < dim; ++d)
            o[d] = w.acc[j * padded + d] * scale;
    }
}

} // namespace

std::size_t prompt_attention_floats(std::uint32_t head_dim) {
    const std::array<std::size_t, 7> floats = region_floats(head_dim);
    return std::accumulate(floats.begin(), floats.end(), std::size_t{0});
}

void prompt_attention(const PromptRows& rows, const PromptShape& s, const float* q, float* out, float* scratch,
                      std::size_t per_thread, int threads) {
    const PromptOps ops = prompt_ops(simd_path());
    const Tiling t = tiling(s);
    const std::size_t items = s.n_kv_heads * t.parts * t.query_tiles;
    parallel_for(items, threads, Schedule::Dynamic, [&](std::size_t item, int thread) {
        run_tile(rows, s, ops, tile_of(item, s, t), q, out, carve(scratch + thread * per_thread, s.head_dim));
    });
}

PromptOps prompt_ops(SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_prompt_ops();
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return neon_prompt_ops();
#endif
    (void)path;
    return {portable_product, portable_softmax_step, portable_cap};
}

} // namespace kvscope::kernels::cpu::detail

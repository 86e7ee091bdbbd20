#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu {
namespace detail {

namespace {

bool uses_avx512vnni(SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    return path == SimdPath::Avx2 && avx512vnni_available();
#else
    (void)path;
    return false;
#endif
}

} // namespace

ActFormat act_format(WeightType type, SimdPath path) {
    switch (type) {
    case WeightType::Q8_0:
    case WeightType::Q4_0:
    case WeightType::Q5_0: return uses_avx512vnni(path) ? ActFormat::Q8x32Pairs : ActFormat::Q8x32;
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K: return ActFormat::Q8x256;
    default: return ActFormat::F32;
    }
}

std::size_t act_row_bytes(WeightType type, SimdPath path, std::size_t cols) {
    switch (act_format(type, path)) {
    case ActFormat::Q8x32: return cols / kActBlockValues * sizeof(ActBlock32);
    case ActFormat::Q8x32Pairs: return (cols / kActBlockValues + 1) / 2 * sizeof(ActPair64);
    case ActFormat::Q8x256: return cols / kActSuperValues * sizeof(ActBlock256);
    case ActFormat::F32: break;
    }
    return cols * sizeof(float);
}

RowDot row_dot(WeightType type, SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    if (act_format(type, path) == ActFormat::Q8x32Pairs)
        return avx512vnni_row_dot(type);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    if (path == SimdPath::Avx2)
        if (const RowDot vnni = avxvnni_row_dot(type))
            return vnni;
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_row_dot(type);
#endif
    (void)path;
    return scalar_row_dot(type);
}

RowDotMultiFn row_dot_multi(WeightType type, SimdPath path) {
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    if (act_format(type, path) == ActFormat::Q8x32Pairs)
        return avx512vnni_row_dot_multi(type);
#endif
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    if (path == SimdPath::Avx2)
        if (const RowDotMultiFn vnni = avxvnni_row_dot_multi(type); vnni.fn != nullptr)
            return vnni;
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
    if (path == SimdPath::Avx2)
        return avx2_row_dot_multi(type);
#endif
    (void)type;
    (void)path;
    return {}; // the portable path: one input at a time
}

} // namespace detail

namespace {

using detail::ActFormat;

// Below this many weight bytes a call is over before threads would pay off.
constexpr std::size_t kParallelMinBytes = 64 * 1024;
// Below this many activation values quantizing them is quicker on one thread.
constexpr std::size_t kParallelMinActivations = 32 * 1024;
// Rows and inputs per matmul tile: about this many bytes each, so a tile
// of weights and its activations both stay in L2.
constexpr std::size_t kTileBytes = 64 * 1024;

void check_args(const void* W, const float* X, const float* Y) {
    if (W == nullptr || X == nullptr || Y == nullptr)
        throw std::invalid_argument("matmul: null weight, input or output pointer");
}

// The activations in the form the weight type's dot product reads. For
// float formats that is X itself; quantized rows go into `storage`.
const std::byte* prepare_activations(WeightType type, const float* X, std::size_t n,
                                     std::size_t cols, SimdPath path,
                                     std::vector<std::byte>& storage) {
    const ActFormat format = detail::act_format(type, path);
    if (format == ActFormat::F32)
        return reinterpret_cast<const std::byte*>(X);
    const std::size_t row_bytes = detail::act_row_bytes(type, path, cols);
    storage.resize(n * row_bytes);
    std::byte* out = storage.data();
    const int threads = n * cols >= kParallelMinActivations ? num_threads() : 1;
    detail::parallel_for(n, threads, detail::Schedule::Even, [&](std::size_t i, int) {
        std::byte* row = out + i * row_bytes;
        switch (format) {
        case ActFormat::Q8x32:
            return detail::quantize_act32(X + i * cols, cols, reinterpret_cast<detail::ActBlock32*>(row), path);
        case ActFormat::Q8x32Pairs: {
            // blocks first, then rearranged: the same codes and scales
            thread_local std::vector<detail::ActBlock32> blocks;
            blocks.resize(cols / detail::kActBlockValues);
            detail::quantize_act32(X + i * cols, cols, blocks.data(), path);
            return detail::pair_act32(blocks.data(), blocks.size(), reinterpret_cast<detail::ActPair64*>(row));
        }
        case ActFormat::Q8x256:
            return detail::quantize_act256(X + i * cols, cols, reinterpret_cast<detail::ActBlock256*>(row), path);
        case ActFormat::F32: break;
        }
    });
    return out;
}

// Reused across calls by the calling thread: no allocation per token.
std::vector<std::byte>& activation_storage() {
    thread_local std::vector<std::byte> storage;
    return storage;
}

} // namespace

void matvec(WeightType type, const void* W, std::size_t rows, std::size_t cols, const float* x,
            float* y) {
    const std::size_t w_row_bytes = weight_row_bytes(type, cols);
    if (rows == 0 || cols == 0)
        return;
    check_args(W, x, y);
    const SimdPath path = simd_path();
    const std::byte* act = prepare_activations(type, x, 1, cols, path, activation_storage());
    const detail::RowDot dot = detail::row_dot(type, path);
    const auto* w = static_cast<const std::byte*>(W);
    const int threads = rows * w_row_bytes >= kParallelMinBytes ? num_threads() : 1;
    detail::parallel_for(rows, threads, detail::Schedule::Even, [&](std::size_t r, int) {
        y[r] = dot(w + r * w_row_bytes, act, cols);
    });
}

void matvecs(std::span<const MatvecJob> jobs, std::size_t cols, const float* x) {
    // Each activation format is prepared once for all the jobs that read it.
    thread_local std::vector<std::byte> storage[detail::kActFormats];
    struct Prepared {
        const std::byte* act;
        detail::RowDot dot;
        std::size_t row_bytes;
        std::size_t first_row; // in the concatenation of all jobs' rows
    };
    const SimdPath path = simd_path();
    // Reused: no allocation per token. The workers read it through this
    // reference: inside the lambda the bare name would be their own copy.
    thread_local std::vector<Prepared> reused;
    std::vector<Prepared>& prepared = reused;
    prepared.clear();
    const std::byte* by_format[detail::kActFormats] = {};
    std::size_t total_rows = 0, total_bytes = 0;
    for (const MatvecJob& job : jobs) {
        const std::size_t row_bytes = weight_row_bytes(job.type, cols);
        check_args(job.W, x, job.y);
        const auto format = static_cast<std::size_t>(detail::act_format(job.type, path));
        if (by_format[format] == nullptr)
            by_format[format] = prepare_activations(job.type, x, 1, cols, path, storage[format]);
        prepared.push_back({by_format[format], detail::row_dot(job.type, path), row_bytes, total_rows});
        total_rows += job.rows;
        total_bytes += job.rows * row_bytes;
    }
    if (total_rows == 0 || cols == 0)
        return;
    const int threads = total_bytes >= kParallelMinBytes ? num_threads() : 1;
    // One even split of all rows: each thread streams one contiguous range,
    // which may cross from one matrix into the next.
    detail::parallel_for(total_rows, threads, detail::Schedule::Even, [&](std::size_t r, int) {
        std::size_t j = prepared.size() - 1;
        while (prepared[j].first_row > r)
            --j;
        const Prepared& p = prepared[j];
        const std::size_t row = r - p.first_row;
        jobs[j].y[row] = p.dot(static_cast<const std::byte*>(jobs[j].W) + row * p.row_bytes, p.act, cols);
    });
}

void matmul(WeightType type, const void* W, std::size_t rows, std::size_t cols, const float* X,
            std::size_t n, float* Y) {
    if (n == 1) // a decode step: rows split exactly evenly, no tiles
        return matvec(type, W, rows, cols, X, Y);
    const std::size_t w_row_bytes = weight_row_bytes(type, cols);
    if (rows == 0 || cols == 0 || n == 0)
        return;
    check_args(W, X, Y);
    const SimdPath path = simd_path();
    const std::byte* act = prepare_activations(type, X, n, cols, path, activation_storage());
    const std::size_t a_row_bytes = detail::act_row_bytes(type, path, cols);
    const detail::RowDot dot = detail::row_dot(type, path);
    const detail::RowDotMultiFn multi = detail::row_dot_multi(type, path);
    const auto* w = static_cast<const std::byte*>(W);

    // Tiles of rows x inputs, row-tile major: threads taking neighbouring
    // tiles share the weight tile in the last-level cache.
    const std::size_t tile_rows = std::clamp<std::size_t>(kTileBytes / w_row_bytes, 1, rows);
    const std::size_t tile_inputs = std::clamp<std::size_t>(kTileBytes / a_row_bytes, 1, n);
    const std::size_t input_tiles = (n + tile_inputs - 1) / tile_inputs;
    const std::size_t tiles = (rows + tile_rows - 1) / tile_rows * input_tiles;
    const int threads = n * rows * w_row_bytes >= kParallelMinBytes ? num_threads() : 1;
    // With one tile of inputs (a small decode batch) the tiles cost the same
    // and the weights stream from memory: contiguous ranges. With more, the
    // tiles are compute-bound and handed out as threads finish.
    const auto schedule = input_tiles == 1 ? detail::Schedule::Even : detail::Schedule::Dynamic;
    detail::parallel_for(tiles, threads, schedule, [&](std::size_t t, int) {
        const std::size_t r0 = t / input_tiles * tile_rows;
        const std::size_t r1 = std::min(rows, r0 + tile_rows);
        const std::size_t i0 = t % input_tiles * tile_inputs;
        const std::size_t i1 = std::min(n, i0 + tile_inputs);
        if (multi.fn == nullptr) {
            for (std::size_t r = r0; r < r1; ++r)
                for (std::size_t i = i0; i < i1; ++i)
                    Y[i * rows + r] = dot(w + r * w_row_bytes, act + i * a_row_bytes, cols);
            return;
        }
        // Each weight block decoded once per group of up to max_inputs
        // inputs rather than once per input: decode, not memory, bounds a
        // small batch (n = number of sequences decoding together).
        float out[8];
        for (std::size_t r = r0; r < r1; ++r)
            for (std::size_t i = i0; i < i1; i += multi.max_inputs) {
                const std::size_t count = std::min(multi.max_inputs, i1 - i);
                multi.fn(w + r * w_row_bytes, act + i * a_row_bytes, a_row_bytes, count, cols, out);
                for (std::size_t j = 0; j < count; ++j)
                    Y[(i + j) * rows + r] = out[j];
            }
    });
}

} // namespace kvscope::kernels::cpu

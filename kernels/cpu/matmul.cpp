#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/packed_kernel.h"
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
    case WeightType::IQ4_NL:
    case WeightType::MXFP4: return ActFormat::Q8x32;
    case WeightType::Q4_1:
    case WeightType::Q5_1: return ActFormat::Q8x32Sums; // their mins need each block's code sum
    case WeightType::Q2_K:
    case WeightType::Q3_K:
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K:
    case WeightType::IQ4_XS: return ActFormat::Q8x256;
    default: return ActFormat::F32;
    }
}

std::size_t act_row_bytes(ActFormat format, std::size_t cols) {
    switch (format) {
    case ActFormat::Q8x32: return cols / kActBlockValues * sizeof(ActBlock32);
    case ActFormat::Q8x32Pairs: return (cols / kActBlockValues + 1) / 2 * sizeof(ActPair64);
    case ActFormat::Q8x32Sums: return cols / kActBlockValues * sizeof(ActBlock32Sum);
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
        if (const RowDot avx2 = avx2_row_dot(type))
            return avx2;
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    if (has_neon_dot(path))
        if (const RowDot dot = neondot_row_dot(type))
            return dot;
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return neon_row_dot(type); // every type (I8MM adds nothing to a row of one input)
#endif
    (void)path;
    return scalar_row_dot(type); // also the types with no AVX2 row kernel (their tiles have one)
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
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    if (has_neon_dot(path))
        if (const RowDotMultiFn dot = neondot_row_dot_multi(type); dot.fn != nullptr)
            return dot;
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (is_neon(path))
        return neon_row_dot_multi(type);
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
// A multiple of every tile kernel's max_inputs (4, 6, 8 or 12).
constexpr std::size_t kInputGroup = 24;

void check_args(const void* W, const float* X, const float* Y) {
    if (W == nullptr || X == nullptr || Y == nullptr)
        throw std::invalid_argument("matmul: null weight, input or output pointer");
}

// The activations in the form a job's kernel reads. For float formats that
// is X itself; quantized rows go into `storage`.
const std::byte* prepare_activations(ActFormat format, const float* X, std::size_t n, std::size_t cols,
                                     SimdPath path, int threads, std::vector<std::byte>& storage) {
    if (format == ActFormat::F32)
        return reinterpret_cast<const std::byte*>(X);
    const std::size_t row_bytes = detail::act_row_bytes(format, cols);
    storage.resize(n * row_bytes);
    std::byte* out = storage.data();
    const int used = n * cols >= kParallelMinActivations ? threads : 1;
    detail::parallel_for(n, used, detail::Schedule::Even, [&](std::size_t i, int) {
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
        case ActFormat::Q8x32Sums:
            return detail::quantize_act32_sum(X + i * cols, cols, reinterpret_cast<detail::ActBlock32Sum*>(row), path);
        case ActFormat::Q8x256:
            return detail::quantize_act256(X + i * cols, cols, reinterpret_cast<detail::ActBlock256*>(row), path);
        case ActFormat::F32: break;
        }
    });
    return out;
}

// One job of a matmuls call, ready to run: its activations and kernels,
// and where its tiles start in the call's list of all jobs' tiles.
struct PreparedJob {
    const std::byte* act;
    detail::RowDot dot;
    detail::RowDotMultiFn multi;
    std::size_t w_row_bytes, a_row_bytes;
    std::size_t tile_rows;
    std::size_t first_tile;
    detail::PackedGemmFn gemm; // set when the job runs on packed tiles
};

// Rows r0..r1 (whole packed tiles, the matrix's last one aside) times
// inputs i0..i1: each weight tile is reused for every group of inputs
// while it sits in L1.
void run_packed_tile(const MatmulJob& job, const PreparedJob& p, std::size_t cols, std::size_t r0,
                     std::size_t r1, std::size_t i0, std::size_t i1) {
    for (std::size_t r = r0; r < r1; r += detail::kPackedRows) {
        const std::byte* tile = job.packed->tile(r / detail::kPackedRows);
        const std::size_t rows = std::min(detail::kPackedRows, r1 - r);
        for (std::size_t i = i0; i < i1; i += p.gemm.max_inputs) {
            const std::size_t count = std::min(p.gemm.max_inputs, i1 - i);
            p.gemm.fn(tile, p.act + i * p.a_row_bytes, p.a_row_bytes, count, cols, job.Y + i * job.rows + r,
                      job.rows, rows);
        }
    }
}

// Rows r0..r1 of a job times inputs i0..i1.
void run_tile(const MatmulJob& job, const PreparedJob& p, std::size_t cols, std::size_t r0, std::size_t r1,
              std::size_t i0, std::size_t i1) {
    if (p.gemm.fn != nullptr)
        return run_packed_tile(job, p, cols, r0, r1, i0, i1);
    const auto* w = static_cast<const std::byte*>(job.W);
    float* Y = job.Y;
    const std::size_t rows = job.rows;
    if (p.multi.fn == nullptr || i1 - i0 == 1) {
        for (std::size_t r = r0; r < r1; ++r)
            for (std::size_t i = i0; i < i1; ++i)
                Y[i * rows + r] = p.dot(w + r * p.w_row_bytes, p.act + i * p.a_row_bytes, cols);
        return;
    }
    // Each weight block decoded once per group of up to max_inputs inputs
    // rather than once per input: decode, not memory, bounds a small batch
    // (n = number of sequences decoding together).
    float out[detail::kMaxMultiInputs];
    for (std::size_t r = r0; r < r1; ++r)
        for (std::size_t i = i0; i < i1; i += p.multi.max_inputs) {
            const std::size_t count = std::min(p.multi.max_inputs, i1 - i);
            p.multi.fn(w + r * p.w_row_bytes, p.act + i * p.a_row_bytes, p.a_row_bytes, count, cols, out);
            for (std::size_t j = 0; j < count; ++j)
                Y[(i + j) * rows + r] = out[j];
        }
}

// The job's packed layout when its tile kernels run on this call's path,
// else null (the job reads W).
const detail::PackedLayout* packed_job_layout(const MatmulJob& job, std::size_t cols, SimdPath path) {
    if (job.packed == nullptr || !*job.packed || detail::best_packed_gemm(job.type, path).fn == nullptr)
        return nullptr;
    if (job.packed->type() != job.type || job.packed->rows() != job.rows || job.packed->cols() != cols)
        throw std::invalid_argument("matmul: packed weights of another shape or type than the job's");
    return detail::packed_layout(job.type);
}

// Rows per work item. A decode step (n = 1) streams its weights from
// memory: one row (one packed tile) per item, split evenly. With more
// inputs, about kTileBytes of weights per item stay in L2 while the rows
// are reused across the inputs; packed items are whole tiles.
std::size_t tile_rows(const PreparedJob& p, std::size_t rows, std::size_t n) {
    const std::size_t unit = p.gemm.fn != nullptr ? detail::kPackedRows : 1;
    if (n == 1)
        return unit;
    const std::size_t fit = std::max<std::size_t>(kTileBytes / (p.w_row_bytes * unit), 1) * unit;
    return std::min(fit, (rows + unit - 1) / unit * unit);
}

// Inputs per work item: about kTileBytes of activations. For tile kernels
// a whole number of their calls (kInputGroup), so that no item ends in a
// call with a few inputs, which runs at a fraction of the speed.
std::size_t input_tile(const PreparedJob& p, std::size_t n) {
    const std::size_t fit = std::max<std::size_t>(kTileBytes / p.a_row_bytes, 1);
    if (p.gemm.fn == nullptr)
        return std::min(fit, n);
    return std::min((fit + kInputGroup - 1) / kInputGroup * kInputGroup, n);
}

} // namespace

void matmuls(std::span<const MatmulJob> jobs, std::size_t cols, const float* X, std::size_t n, int threads) {
    const SimdPath path = simd_path();
    // Each activation format is prepared once for all the jobs that read it.
    thread_local std::vector<std::byte> storage[detail::kActFormats];
    // Reused: no allocation per call. The workers read it through this
    // reference: inside the lambda the bare name would be their own copy.
    thread_local std::vector<PreparedJob> reused;
    std::vector<PreparedJob>& prepared = reused; // prepared[j] is jobs[j]'s
    prepared.clear();
    const std::byte* by_format[detail::kActFormats] = {};
    // Work items are (row tile, input tile) pairs over all jobs' rows (see
    // tile_rows); a thread's contiguous range of them may cross from one
    // matrix into the next.
    std::size_t tile_inputs = std::max<std::size_t>(n, 1), tiles = 0, total_bytes = 0;
    for (const MatmulJob& job : jobs) {
        const std::size_t w_row_bytes = weight_row_bytes(job.type, cols); // throws for a bad cols
        prepared.push_back({nullptr, nullptr, {}, w_row_bytes, 0, 0, tiles, {}});
        if (job.rows == 0 || cols == 0 || n == 0)
            continue;
        check_args(job.W, X, job.Y);
        PreparedJob& p = prepared.back();
        const detail::PackedLayout* layout = packed_job_layout(job, cols, path);
        if (layout != nullptr)
            p.gemm = detail::best_packed_gemm(job.type, path);
        const ActFormat format = layout != nullptr ? layout->act : detail::act_format(job.type, path);
        const auto f = static_cast<std::size_t>(format);
        if (by_format[f] == nullptr)
            by_format[f] = prepare_activations(format, X, n, cols, path, threads, storage[f]);
        p.act = by_format[f];
        p.a_row_bytes = detail::act_row_bytes(format, cols);
        if (layout == nullptr) {
            p.dot = detail::row_dot(job.type, path);
            p.multi = detail::row_dot_multi(job.type, path);
        }
        p.tile_rows = tile_rows(p, job.rows, n);
        tile_inputs = std::min(tile_inputs, input_tile(p, n));
        tiles += (job.rows + p.tile_rows - 1) / p.tile_rows;
        total_bytes += job.rows * w_row_bytes;
    }
    if (tiles == 0)
        return;
    const std::size_t input_tiles = (n + tile_inputs - 1) / tile_inputs;
    // With one tile of inputs the tiles cost about the same: contiguous
    // ranges. With more, they are compute-bound and handed out as threads
    // finish. Tiles are row-tile major: threads taking neighbouring tiles
    // share the weight tile in the last-level cache.
    const auto schedule = input_tiles == 1 ? detail::Schedule::Even : detail::Schedule::Dynamic;
    const int used = n * total_bytes >= kParallelMinBytes ? threads : 1;
    detail::parallel_for(tiles * input_tiles, used, schedule, [&](std::size_t t, int) {
        const std::size_t row_tile = t / input_tiles;
        std::size_t j = prepared.size() - 1; // the last job starting at or before row_tile
        while (prepared[j].first_tile > row_tile)
            --j;
        const PreparedJob& p = prepared[j];
        const std::size_t r0 = (row_tile - p.first_tile) * p.tile_rows;
        const std::size_t i0 = t % input_tiles * tile_inputs;
        run_tile(jobs[j], p, cols, r0, std::min(jobs[j].rows, r0 + p.tile_rows), i0, std::min(n, i0 + tile_inputs));
    });
}

void matmul(WeightType type, const void* W, std::size_t rows, std::size_t cols, const float* X,
            std::size_t n, float* Y, int threads) {
    const MatmulJob job{type, W, rows, Y};
    matmuls({&job, 1}, cols, X, n, threads);
}

void matvec(WeightType type, const void* W, std::size_t rows, std::size_t cols, const float* x, float* y,
            int threads) {
    matmul(type, W, rows, cols, x, 1, y, threads);
}

} // namespace kvscope::kernels::cpu

// Matrix-vector and matrix-matrix products with weights in any supported
// ggml format. Weights stay in their file format: quantized blocks are
// decoded on the fly, never expanded into a float copy.
//
// W is `rows` rows of `cols` values, row-major, each row a whole number of
// the type's blocks (weight_row_bytes), no alignment needed: exactly how a
// GGUF tensor with ggml dims [cols, rows] lies in the file.
//
// For the quantized types the activations are first quantized to 8 bits
// per value with one scale per block of 32 (per 256 for the K-quants and
// IQ4_XS), exactly as llama.cpp's x86 backend does (activation_quant.h),
// and the products run in integers. That adds an error of at most
// max|x over the block| / 254 per activation value (plus 2^-11 of it for
// the f16 scales of the blocks of 32), small next to the weights' own
// quantization error. F32/F16/BF16 weights multiply float activations
// directly. Results accumulate in float.
//
// Threads: rows are split across the call's `threads` (at least 1; the
// caller's own count, see parallel.h). SIMD: the
// AVX2 path when simd_path() says so (simd_path.h), else portable code.
// On the AVX2 path a job with packed weights (MatmulJob::packed) runs on
// the tile kernels (packed_kernel.h).
#pragma once

#include <cstddef>
#include <span>

#include "kernels/cpu/packed_weights.h"
#include "kernels/cpu/weight_type.h"

namespace kvscope::kernels::cpu {

// y[r] = dot(W row r, x) for r < rows. x has cols values, y rows values.
// Throws std::invalid_argument when cols is not a whole number of blocks
// or a pointer is null.
void matvec(WeightType type, const void* W, std::size_t rows, std::size_t cols, const float* x,
            float* y, int threads);

// Y[i][r] = dot(W row r, X[i]) for i < n, r < rows. X is n x cols and Y is
// n x rows, both row-major. Each weight row is reused across a tile of
// inputs while it sits in cache, so prefill is bound by arithmetic rather
// than memory. Same errors as matvec. Y of one input is bit-identical to
// matvec's.
void matmul(WeightType type, const void* W, std::size_t rows, std::size_t cols, const float* X,
            std::size_t n, float* Y, int threads);

// One weight matrix of a group that multiplies the same inputs.
struct MatmulJob {
    WeightType type;
    const void* W;
    std::size_t rows;
    float* Y; // n x rows values
    // W packed into tiles (packed_weights.h), or null. On the AVX2 path the
    // tile kernels read it instead of W; their sums run in another order,
    // so results differ from W's in the last bits, but every output stays
    // independent of the other inputs in the call.
    const PackedWeights* packed = nullptr;
};

// Y = X W^T for every job, all matrices having `cols` columns: a layer's Q,
// K and V projections, or its FFN gate and up, in one hand-off to the
// threads instead of one each (a step makes ~100 hand-offs, and each costs
// a synchronisation and an uneven finish). Every Y is bit-identical to
// matmul's. Same errors as matvec.
void matmuls(std::span<const MatmulJob> jobs, std::size_t cols, const float* X, std::size_t n, int threads);

} // namespace kvscope::kernels::cpu

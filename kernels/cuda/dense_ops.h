// The dense steps of a transformer layer on the GPU that kernels/cuda's
// other launchers do not cover: weight-matrix products, residual and bias
// additions, and plain device copies. Pointers are device memory unless a
// comment says otherwise; launches are queued on `stream`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_error.h"

namespace kvscope::kernels::cuda {

// How a weight matrix is kept on the device: f32 (models stored in f32 keep
// their exact values) or f16 (everything else, dequantized once at load).
enum class DenseType { F32, F16 };

// out[t][r] = sum_c w[r][c] * x[t][c] for a rows x cols row-major matrix w
// and n_tokens rows of x, accumulated in f32. One warp per output row and
// group of tokens, so a decode step (n_tokens = 1) streams each weight row
// once, coalesced, and a prefill chunk reads it once per 8 tokens.
// Throws std::invalid_argument when cols is odd (rows are read as pairs).
void matmul(const void* w, DenseType type, std::uint32_t rows, std::uint32_t cols, const float* x,
            std::uint32_t n_tokens, float* out, Stream stream = nullptr);

// x[i] += y[i] (the residual stream).
void add_in_place(float* x, const float* y, std::size_t n, Stream stream = nullptr);
// rows[r][i] += bias[i] for n_rows rows of `width` floats.
void add_bias(float* rows, const float* bias, std::uint32_t n_rows, std::uint32_t width, Stream stream = nullptr);

// Synchronous copy of `bytes` between any two of host and device memory
// (the direction follows from the pointers, unified addressing); throws
// CudaError when the copy fails.
void copy_bytes(void* dst, const void* src, std::size_t bytes);
// The same, queued on `stream`: for device-to-device copies in a step.
void copy_bytes_async(void* dst, const void* src, std::size_t bytes, Stream stream = nullptr);

} // namespace kvscope::kernels::cuda

#include "kernels/cuda/dense_ops.h"

#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"

namespace kvscope::kernels::cuda {
namespace {

using detail::to_stream;

constexpr int kWarps = 4;        // per thread block, one output row each
constexpr int kTokensPerWarp = 8; // activations a warp multiplies with each weight row it loads

__device__ float2 weight_pair(const float* row, std::uint32_t c) { return reinterpret_cast<const float2*>(row)[c]; }
__device__ float2 weight_pair(const __half* row, std::uint32_t c) {
    return __half22float2(reinterpret_cast<const __half2*>(row)[c]);
}

// Block (row group, token group): warp w computes row blockIdx.x * kWarps +
// w for tokens [blockIdx.y * kTokensPerWarp, +kTokensPerWarp).
template <typename W>
__global__ void matmul_kernel(const W* __restrict__ w, std::uint32_t rows, std::uint32_t cols,
                              const float* __restrict__ x, std::uint32_t n_tokens, float* __restrict__ out) {
    const std::uint32_t row = blockIdx.x * kWarps + threadIdx.x / 32;
    const std::uint32_t lane = threadIdx.x % 32;
    const std::uint32_t t0 = blockIdx.y * kTokensPerWarp;
    if (row >= rows)
        return;
    const std::uint32_t n = min(static_cast<std::uint32_t>(kTokensPerWarp), n_tokens - t0);
    const W* wr = w + static_cast<std::size_t>(row) * cols;
    float acc[kTokensPerWarp] = {};
    for (std::uint32_t c = lane; c < cols / 2; c += 32) {
        const float2 wv = weight_pair(wr, c);
#pragma unroll
        for (int t = 0; t < kTokensPerWarp; ++t)
            if (static_cast<std::uint32_t>(t) < n) {
                const float2 xv = reinterpret_cast<const float2*>(x + static_cast<std::size_t>(t0 + t) * cols)[c];
                acc[t] += wv.x * xv.x + wv.y * xv.y;
            }
    }
#pragma unroll
    for (int t = 0; t < kTokensPerWarp; ++t) {
        float v = acc[t];
        for (int offset = 16; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffffu, v, offset);
        if (lane == 0 && static_cast<std::uint32_t>(t) < n)
            out[static_cast<std::size_t>(t0 + t) * rows + row] = v;
    }
}

__global__ void add_kernel(float* x, const float* y, std::size_t n) {
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        x[i] += y[i];
}

__global__ void add_bias_kernel(float* rows, const float* bias, std::size_t n, std::uint32_t width) {
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        rows[i] += bias[i % width];
}

unsigned blocks_for(std::size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

} // namespace

void matmul(const void* w, DenseType type, std::uint32_t rows, std::uint32_t cols, const float* x,
            std::uint32_t n_tokens, float* out, Stream stream) {
    if (cols % 2 != 0)
        throw std::invalid_argument("cuda::matmul: " + std::to_string(cols) + " columns, expected an even count");
    if (rows == 0 || n_tokens == 0)
        return;
    const dim3 grid((rows + kWarps - 1) / kWarps, (n_tokens + kTokensPerWarp - 1) / kTokensPerWarp);
    if (type == DenseType::F32)
        matmul_kernel<<<grid, kWarps * 32, 0, to_stream(stream)>>>(static_cast<const float*>(w), rows, cols, x,
                                                                    n_tokens, out);
    else
        matmul_kernel<<<grid, kWarps * 32, 0, to_stream(stream)>>>(static_cast<const __half*>(w), rows, cols, x,
                                                                    n_tokens, out);
    detail::check_launch("matmul_kernel");
}

void add_in_place(float* x, const float* y, std::size_t n, Stream stream) {
    if (n == 0)
        return;
    add_kernel<<<blocks_for(n, 256), 256, 0, to_stream(stream)>>>(x, y, n);
    detail::check_launch("add_kernel");
}

void add_bias(float* rows, const float* bias, std::uint32_t n_rows, std::uint32_t width, Stream stream) {
    const std::size_t n = static_cast<std::size_t>(n_rows) * width;
    if (n == 0)
        return;
    add_bias_kernel<<<blocks_for(n, 256), 256, 0, to_stream(stream)>>>(rows, bias, n, width);
    detail::check_launch("add_bias_kernel");
}

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
    if (bytes > 0)
        KVSCOPE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void copy_bytes_async(void* dst, const void* src, std::size_t bytes, Stream stream) {
    if (bytes > 0)
        KVSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, to_stream(stream)));
}

} // namespace kvscope::kernels::cuda

#include "kernels/cuda/layer_ops.h"

#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"

namespace kvscope::kernels::cuda {
namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kWarp = 32;

// Sum over the thread block; every thread gets the result. `shared` holds
// one float per warp.
__device__ float block_sum(float x, float* shared) {
    for (unsigned o = kWarp / 2; o > 0; o /= 2)
        x += __shfl_xor_sync(0xFFFFFFFFu, x, o);
    const unsigned warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    if (lane == 0)
        shared[warp] = x;
    __syncthreads();
    float total = 0.0f;
    for (unsigned w = 0; w < blockDim.x / kWarp; ++w) // same order in every thread: same result
        total += shared[w];
    return total;
}

// One block per row. The mean of squares is summed in float: per thread,
// then in a fixed tree, so its relative error stays near log2(n) ulp.
__global__ void rms_norm_kernel(const float* x, const float* weight, unsigned n, float eps, float* out) {
    __shared__ float partial[kThreads / kWarp];
    const float* row = x + std::size_t{blockIdx.x} * n;
    float squares = 0.0f;
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
        squares += row[i] * row[i];
    const float scale = rsqrtf(block_sum(squares, partial) / static_cast<float>(n) + eps);
    float* dst = out + std::size_t{blockIdx.x} * n;
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x)
        dst[i] = row[i] * scale * weight[i];
}

// One thread per (token, head, pair): a = x[i * stride], b = its partner,
//   a' = a cos - b sin,  b' = a sin + b cos,
// angle = position * theta^(-2i / rot_dim), computed in double as the CPU does.
__global__ void rope_kernel(float* x, const std::uint32_t* positions, unsigned n_tokens, unsigned n_heads,
                            unsigned head_dim, unsigned rot_dim, float theta_base, bool adjacent) {
    const unsigned pairs = rot_dim / 2;
    const std::size_t id = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (id >= std::size_t{n_tokens} * n_heads * pairs)
        return;
    const unsigned i = id % pairs;
    const std::size_t head = id / pairs; // token * n_heads + h
    const std::size_t token = head / n_heads;
    const double angle = positions[token] * pow(static_cast<double>(theta_base), -2.0 * i / rot_dim);
    const float c = static_cast<float>(cos(angle)), s = static_cast<float>(sin(angle));
    float* h = x + head * head_dim;
    float& a = h[adjacent ? 2 * i : i];
    float& b = h[adjacent ? 2 * i + 1 : i + pairs];
    const float a0 = a;
    a = a0 * c - b * s;
    b = a0 * s + b * c;
}

__global__ void silu_mul_kernel(const float* gate, const float* up, float* out, std::size_t n) {
    const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i < n) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i]; // g -> -inf: g / inf = -0, no NaN
    }
}

template <typename T>
__device__ float widen(T value) {
    if constexpr (sizeof(T) == 2)
        return __half2float(value);
    else
        return value;
}

// One block per token.
template <typename T>
__global__ void embedding_kernel(const T* table, unsigned n_vocab, unsigned dim, const std::uint32_t* tokens,
                                 float* out) {
    const std::uint32_t token = tokens[blockIdx.x];
    float* dst = out + std::size_t{blockIdx.x} * dim;
    for (unsigned i = threadIdx.x; i < dim; i += blockDim.x)
        dst[i] = token < n_vocab ? widen(table[std::size_t{token} * dim + i]) : __int_as_float(0x7FC00000);
}

unsigned blocks_for(std::size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

} // namespace

void rms_norm(const float* x, const float* weight, std::uint32_t n_rows, std::uint32_t n, float eps, float* out,
              Stream stream) {
    if (n_rows == 0 || n == 0)
        return;
    rms_norm_kernel<<<n_rows, kThreads, 0, detail::to_stream(stream)>>>(x, weight, n, eps, out);
    detail::check_launch("rms_norm_kernel");
}

void rope(float* x, const std::uint32_t* positions, std::uint32_t n_tokens, std::uint32_t n_heads,
          std::uint32_t head_dim, std::uint32_t rot_dim, float theta_base, cpu::RopeStyle style, Stream stream) {
    if (rot_dim % 2 != 0 || rot_dim > head_dim)
        throw std::invalid_argument("cuda::rope: rot_dim must be even and at most head_dim (" +
                                    std::to_string(rot_dim) + " vs head_dim " + std::to_string(head_dim) + ")");
    const std::size_t threads = std::size_t{n_tokens} * n_heads * (rot_dim / 2);
    if (threads == 0)
        return;
    rope_kernel<<<blocks_for(threads), kThreads, 0, detail::to_stream(stream)>>>(
        x, positions, n_tokens, n_heads, head_dim, rot_dim, theta_base, style == cpu::RopeStyle::AdjacentPairs);
    detail::check_launch("rope_kernel");
}

void silu_mul(const float* gate, const float* up, float* out, std::size_t n, Stream stream) {
    if (n == 0)
        return;
    silu_mul_kernel<<<blocks_for(n), kThreads, 0, detail::to_stream(stream)>>>(gate, up, out, n);
    detail::check_launch("silu_mul_kernel");
}

void embedding_rows(const void* table, EmbeddingType type, std::uint32_t n_vocab, std::uint32_t dim,
                    const std::uint32_t* tokens, std::uint32_t n_tokens, float* out, Stream stream) {
    if (n_tokens == 0 || dim == 0)
        return;
    const cudaStream_t s = detail::to_stream(stream);
    if (type == EmbeddingType::F32)
        embedding_kernel<<<n_tokens, kThreads, 0, s>>>(static_cast<const float*>(table), n_vocab, dim, tokens, out);
    else
        embedding_kernel<<<n_tokens, kThreads, 0, s>>>(static_cast<const __half*>(table), n_vocab, dim, tokens, out);
    detail::check_launch("embedding_kernel");
}

} // namespace kvscope::kernels::cuda

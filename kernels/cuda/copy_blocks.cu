#include "kernels/cuda/copy_blocks.h"

#include <cuda_runtime.h>

namespace kvscope::kernels::cuda {
namespace {

// One thread block per (src, dst) pair; threads stride over the block's
// bytes in 16-byte words when the block size allows it.
__global__ void copy_blocks_kernel(unsigned char* pool, std::size_t bytes_per_block,
                                   const std::uint32_t* src, const std::uint32_t* dst) {
    const unsigned char* from = pool + static_cast<std::size_t>(src[blockIdx.x]) * bytes_per_block;
    unsigned char* to = pool + static_cast<std::size_t>(dst[blockIdx.x]) * bytes_per_block;
    if (bytes_per_block % sizeof(uint4) == 0) {
        const auto* f = reinterpret_cast<const uint4*>(from);
        auto* t = reinterpret_cast<uint4*>(to);
        for (std::size_t i = threadIdx.x; i < bytes_per_block / sizeof(uint4); i += blockDim.x)
            t[i] = f[i];
    } else {
        for (std::size_t i = threadIdx.x; i < bytes_per_block; i += blockDim.x)
            to[i] = from[i];
    }
}

// "" on success, else "call: reason".
std::string error_text(cudaError_t status, const char* call) {
    return status == cudaSuccess ? std::string() : std::string(call) + ": " + cudaGetErrorString(status);
}

} // namespace

std::string copy_blocks(std::byte* pool, std::size_t bytes_per_block, const std::uint32_t* src,
                        const std::uint32_t* dst, std::size_t count) {
    if (count == 0)
        return {};
    std::uint32_t* ids = nullptr;
    const std::size_t id_bytes = count * sizeof(std::uint32_t);
    if (auto s = cudaMalloc(&ids, 2 * id_bytes); s != cudaSuccess)
        return error_text(s, "cudaMalloc");
    std::string error = error_text(cudaMemcpy(ids, src, id_bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (error.empty())
        error = error_text(cudaMemcpy(ids + count, dst, id_bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (error.empty()) {
        copy_blocks_kernel<<<static_cast<unsigned>(count), 256>>>(reinterpret_cast<unsigned char*>(pool),
                                                                  bytes_per_block, ids, ids + count);
        error = error_text(cudaGetLastError(), "copy_blocks_kernel");
    }
    if (error.empty())
        error = error_text(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    cudaFree(ids);
    return error;
}

std::string copy_blocks_on_device(std::byte* host_pool, std::size_t pool_bytes,
                                  std::size_t bytes_per_block, const std::uint32_t* src,
                                  const std::uint32_t* dst, std::size_t count) {
    void* device_pool = nullptr;
    if (auto s = cudaMalloc(&device_pool, pool_bytes); s != cudaSuccess)
        return error_text(s, "cudaMalloc");
    std::string error =
        error_text(cudaMemcpy(device_pool, host_pool, pool_bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (error.empty())
        error = copy_blocks(static_cast<std::byte*>(device_pool), bytes_per_block, src, dst, count);
    if (error.empty())
        error = error_text(cudaMemcpy(host_pool, device_pool, pool_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    cudaFree(device_pool);
    return error;
}

} // namespace kvscope::kernels::cuda

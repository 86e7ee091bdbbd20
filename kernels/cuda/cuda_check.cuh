// Internal to kernels/cuda: every CUDA runtime call goes through
// KVSCOPE_CUDA_CHECK, which throws CudaError naming the call.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/cuda_error.h"

namespace kvscope::kernels::cuda::detail {

inline void check_cuda(cudaError_t status, const char* call) {
    if (status != cudaSuccess)
        throw CudaError(std::string(call) + ": " + cudaGetErrorString(status));
}

// After a launch: a bad configuration shows up here, a fault inside the
// kernel at the next synchronizing call.
inline void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

inline cudaStream_t to_stream(Stream stream) { return static_cast<cudaStream_t>(stream); }

} // namespace kvscope::kernels::cuda::detail

#define KVSCOPE_CUDA_CHECK(call) ::kvscope::kernels::cuda::detail::check_cuda((call), #call)

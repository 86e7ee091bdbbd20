// Errors of the CUDA kernels' host side, in plain C++ (no CUDA headers).
#pragma once

#include <stdexcept>
#include <string>

namespace kvscope::kernels::cuda {

// A CUDA runtime call failed. what() names the call and the runtime's
// reason, e.g. "cudaMalloc(pool): out of memory". Argument errors (shapes,
// layouts) are std::invalid_argument instead, thrown before any launch.
class CudaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// An opaque cudaStream_t; nullptr is the default stream. Launchers queue
// their kernels on it and return without waiting.
using Stream = void*;

// Waits for all queued work on the device; throws CudaError for a failure
// of any kernel launched before (they report asynchronously).
void synchronize();

} // namespace kvscope::kernels::cuda

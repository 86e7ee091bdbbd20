#include "kernels/cuda/cuda_device.h"

#include <cuda_runtime.h>

namespace kvscope::kernels::cuda {

DeviceProbe probe_device() {
    DeviceProbe probe;
    // Without a driver this returns an error (e.g. cudaErrorInsufficientDriver)
    // rather than crashing: that is the "use the CPU" case.
    const cudaError_t status = cudaGetDeviceCount(&probe.count);
    if (status != cudaSuccess || probe.count == 0) {
        probe.count = 0;
        probe.error = status != cudaSuccess ? cudaGetErrorString(status) : "no device";
        cudaGetLastError(); // clear the sticky error for later calls
        return probe;
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        probe.name = prop.name;
    cudaMemGetInfo(&probe.memory_free, &probe.memory_total);
    return probe;
}

} // namespace kvscope::kernels::cuda

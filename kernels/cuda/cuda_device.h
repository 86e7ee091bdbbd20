// Plain C++ view of the CUDA runtime's device query; no CUDA headers leak out.
#pragma once

#include <cstddef>
#include <string>

namespace kvscope::kernels::cuda {

struct DeviceProbe {
    int count = 0;            // usable devices; 0 when there is no GPU or driver
    std::string name;         // device 0's name when count > 0
    std::size_t memory_total = 0;
    std::size_t memory_free = 0;
    std::string error;        // the runtime's reason when count == 0
};

DeviceProbe probe_device();

} // namespace kvscope::kernels::cuda

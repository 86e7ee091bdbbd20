#pragma once

#include <cstddef>
#include <string>

namespace kvscope {

// Where KV blocks and compute can live. Detected at run time: a binary built
// with CUDA still runs on a machine with no GPU or no driver.
struct ComputeDevice {
    bool cuda = false;          // false: the host (CPU) holds the KV pool
    std::string name;           // "CPU" or the GPU's name
    std::size_t memory_total = 0; // bytes; 0 on the CPU (not reported)
    std::size_t memory_free = 0;
    std::string note;           // why the CPU was chosen, when it was
};

// Probes once per process and logs the outcome on the "engine" logger,
// e.g. "CUDA: no device, using CPU"; later calls return the same answer
// (memory_free as it was then).
ComputeDevice detect_device();
// Probes again, without logging: for snapshots that report free VRAM now.
ComputeDevice device_memory();
// The host as a device: named "CPU", memory not reported.
ComputeDevice host_device();

} // namespace kvscope

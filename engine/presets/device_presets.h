#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kvscope {

// An accelerator's memory, as its driver reports the total (nvidia-smi's
// "MiB" figure; for Apple silicon, the unified memory size, which the GPU
// shares with everything else).
struct DevicePreset {
    std::string name;
    std::string description;
    std::uint64_t memory_bytes = 0;
};

std::span<const DevicePreset> device_presets();
const DevicePreset& find_device_preset(std::string_view name); // throws kvscope::Error

} // namespace kvscope

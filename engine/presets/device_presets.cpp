#include "engine/presets/device_presets.h"

#include <array>

#include "engine/core/error.h"

namespace kvscope {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024;

const std::array kDevices{
    DevicePreset{"h200-141gb", "NVIDIA H200 141GB HBM3e", 143771 * kMiB},
    DevicePreset{"h100-80gb", "NVIDIA H100 80GB HBM3", 81559 * kMiB},
    DevicePreset{"a100-80gb", "NVIDIA A100 80GB", 81920 * kMiB},
    DevicePreset{"a100-40gb", "NVIDIA A100 40GB", 40960 * kMiB},
    DevicePreset{"l40s-48gb", "NVIDIA L40S 48GB", 46068 * kMiB},
    DevicePreset{"rtx-4090-24gb", "NVIDIA GeForce RTX 4090 24GB", 24564 * kMiB},
    DevicePreset{"rtx-3090-24gb", "NVIDIA GeForce RTX 3090 24GB", 24576 * kMiB},
    DevicePreset{"m2-max-96gb", "Apple M2 Max, 96 GB unified memory", 96 * 1024 * kMiB},
};

} // namespace

std::span<const DevicePreset> device_presets() { return kDevices; }

const DevicePreset& find_device_preset(std::string_view name) {
    for (const DevicePreset& d : kDevices)
        if (d.name == name)
            return d;
    std::string known;
    for (const DevicePreset& d : kDevices)
        known += (known.empty() ? "" : ", ") + d.name;
    throw Error("unknown GPU preset '" + std::string(name) + "' (known: " + known + ")");
}

} // namespace kvscope

#include "engine/core/device.h"

#include "engine/core/log.h"

#ifdef KVSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_device.h"
#endif

namespace kvscope {

namespace {

ComputeDevice probe_and_log() {
    ComputeDevice device = host_device();
#ifdef KVSCOPE_HAVE_CUDA
    const kernels::cuda::DeviceProbe probe = kernels::cuda::probe_device();
    if (probe.count > 0) {
        device = ComputeDevice{true, probe.name, probe.memory_total, probe.memory_free, {}};
        logger("engine")->info("CUDA: {} ({:.1f} GiB, {:.1f} GiB free)", probe.name,
                               static_cast<double>(probe.memory_total) / (1ull << 30),
                               static_cast<double>(probe.memory_free) / (1ull << 30));
        return device;
    }
    device.note = "no CUDA device (" + probe.error + ")";
    logger("engine")->info("CUDA: no device, using CPU ({})", probe.error);
#else
    device.note = "built without CUDA";
    logger("engine")->info("CUDA: not built in, using CPU");
#endif
    return device;
}

} // namespace

ComputeDevice detect_device() {
    // Once per process: every engine and generate() asks, and the answer
    // (and its log line) does not change while the process runs.
    static const ComputeDevice device = probe_and_log();
    return device;
}

ComputeDevice device_memory() {
#ifdef KVSCOPE_HAVE_CUDA
    const kernels::cuda::DeviceProbe probe = kernels::cuda::probe_device();
    if (probe.count > 0)
        return ComputeDevice{true, probe.name, probe.memory_total, probe.memory_free, {}};
#endif
    return host_device();
}

ComputeDevice host_device() { return ComputeDevice{false, "CPU", 0, 0, {}}; }

} // namespace kvscope

// A tiny test harness for the gpu tests: plain C++, no Qt, so the device
// check (kernels/cuda/device-check.sh) builds them on a machine without Qt.
// A program runs its cases and exits 0, 1 on a failure, or 77 (ctest's
// SKIP_RETURN_CODE) with the reason when there is no CUDA device, unless
// KVSCOPE_REQUIRE_GPU is set (the device check sets it): then no device is
// a failure, not a skip.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/cuda_device.h"

namespace gpu_check {

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

inline std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line) + ": "; }

// The test case fails with `message` unless `fn` throws E whose what()
// contains `needle`.
template <typename E, typename F>
void expect_throw(F&& fn, const std::string& needle, const std::string& message) {
    try {
        fn();
    } catch (const E& e) {
        if (std::string(e.what()).find(needle) == std::string::npos)
            throw Failure(message + ": threw \"" + e.what() + "\", expected it to mention \"" + needle + "\"");
        return;
    }
    throw Failure(message + ": did not throw");
}

using Case = std::pair<const char*, std::function<void()>>;

inline int run(const char* program, std::initializer_list<Case> cases) {
    const kvscope::kernels::cuda::DeviceProbe device = kvscope::kernels::cuda::probe_device();
    if (device.count == 0) {
        const bool required = std::getenv("KVSCOPE_REQUIRE_GPU") != nullptr;
        std::printf("%s %s: no CUDA device (%s)\n", required ? "FAIL" : "SKIP", program, device.error.c_str());
        return required ? 1 : 77;
    }
    std::printf("%s on %s\n", program, device.name.c_str());
    int failures = 0;
    for (const auto& [name, fn] : cases) {
        try {
            fn();
            std::printf("PASS %s\n", name);
        } catch (const std::exception& e) {
            ++failures;
            std::printf("FAIL %s: %s\n", name, e.what());
        }
        std::fflush(stdout);
    }
    std::printf("%s: %d of %zu failed\n", program, failures, cases.size());
    return failures == 0 ? 0 : 1;
}

} // namespace gpu_check

#define GPU_CHECK(condition, message)                                                           \
    do {                                                                                        \
        if (!(condition))                                                                       \
            throw ::gpu_check::Failure(::gpu_check::where(__FILE__, __LINE__) + (message));     \
    } while (false)

#include "kernels/cpu/simd_path.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/cpu/cpu_features.h"

namespace kvscope::kernels::cpu {

bool simd_path_available(SimdPath path) {
    [[maybe_unused]] const CpuFeatures& cpu = cpu_features();
    switch (path) {
    case SimdPath::Scalar: return true;
#if defined(KVSCOPE_KERNELS_AVX2)
    case SimdPath::Avx2: return cpu.avx2 && cpu.fma && cpu.f16c;
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    case SimdPath::Neon: return cpu.neon;
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    case SimdPath::NeonDot: return cpu.neon && cpu.dotprod;
#endif
#if defined(KVSCOPE_KERNELS_NEON_I8MM)
    case SimdPath::NeonI8mm: return cpu.neon && cpu.dotprod && cpu.i8mm;
#endif
    default: return false;
    }
}

namespace {

constexpr SimdPath kAllPaths[] = {SimdPath::Scalar, SimdPath::Avx2, SimdPath::Neon, SimdPath::NeonDot,
                                  SimdPath::NeonI8mm};

const std::vector<SimdPath>& available() {
    static const std::vector<SimdPath> paths = [] {
        std::vector<SimdPath> p;
        std::ranges::copy_if(kAllPaths, std::back_inserter(p), simd_path_available);
        return p;
    }();
    return paths;
}

std::string available_names() {
    std::string names;
    for (const SimdPath p : available())
        names += (names.empty() ? "" : ", ") + std::string(to_string(p));
    return names;
}

// KVSCOPE_SIMD's path, or the best one when it is unset or empty.
SimdPath initial_path() {
    const char* env = std::getenv("KVSCOPE_SIMD");
    if (env == nullptr || *env == '\0')
        return best_simd_path();
    const auto named = std::ranges::find_if(kAllPaths, [env](SimdPath p) { return std::string_view(env) == to_string(p); });
    if (named == std::end(kAllPaths) || !simd_path_available(*named))
        throw std::invalid_argument("KVSCOPE_SIMD=" + std::string(env) + ": this build and CPU run " +
                                    available_names());
    return *named;
}

std::atomic<SimdPath>& current() {
    static std::atomic<SimdPath> path{initial_path()};
    return path;
}

} // namespace

SimdPath best_simd_path() { return available().back(); }

std::span<const SimdPath> available_simd_paths() { return available(); }

SimdPath simd_path() { return current().load(std::memory_order_relaxed); }

void set_simd_path(SimdPath path) {
    if (!simd_path_available(path))
        throw std::invalid_argument(std::string("the ") + to_string(path) +
                                    " kernels are not in this build or this CPU lacks them; it runs " +
                                    available_names());
    current().store(path, std::memory_order_relaxed);
}

const char* to_string(SimdPath path) {
    switch (path) {
    case SimdPath::Scalar: return "scalar";
    case SimdPath::Avx2: return "avx2";
    case SimdPath::Neon: return "neon";
    case SimdPath::NeonDot: return "neon-dotprod";
    case SimdPath::NeonI8mm: return "neon-i8mm";
    }
    return "?";
}

} // namespace kvscope::kernels::cpu

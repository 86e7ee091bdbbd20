#include "kernels/cpu/weight_type.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu {
namespace {

struct Geometry {
    std::size_t values;
    std::size_t bytes;
};

Geometry geometry(WeightType type) {
    switch (type) {
    case WeightType::F32: return {1, 4};
    case WeightType::F16:
    case WeightType::BF16: return {1, 2};
    case WeightType::Q8_0: return {kQuantBlockValues, sizeof(BlockQ8_0)};
    case WeightType::Q4_0: return {kQuantBlockValues, sizeof(BlockQ4_0)};
    case WeightType::Q5_0: return {kQuantBlockValues, sizeof(BlockQ5_0)};
    case WeightType::Q4_K: return {kSuperBlockValues, sizeof(BlockQ4_K)};
    case WeightType::Q5_K: return {kSuperBlockValues, sizeof(BlockQ5_K)};
    case WeightType::Q6_K: return {kSuperBlockValues, sizeof(BlockQ6_K)};
    }
    throw std::invalid_argument("unsupported weight type " +
                                std::to_string(static_cast<std::uint32_t>(type)));
}

} // namespace

bool is_weight_type(std::uint32_t raw) {
    switch (static_cast<WeightType>(raw)) {
    case WeightType::F32:
    case WeightType::F16:
    case WeightType::BF16:
    case WeightType::Q8_0:
    case WeightType::Q4_0:
    case WeightType::Q5_0:
    case WeightType::Q4_K:
    case WeightType::Q5_K:
    case WeightType::Q6_K: return true;
    }
    return false;
}

std::string_view to_string(WeightType type) {
    switch (type) {
    case WeightType::F32: return "F32";
    case WeightType::F16: return "F16";
    case WeightType::BF16: return "BF16";
    case WeightType::Q8_0: return "Q8_0";
    case WeightType::Q4_0: return "Q4_0";
    case WeightType::Q5_0: return "Q5_0";
    case WeightType::Q4_K: return "Q4_K";
    case WeightType::Q5_K: return "Q5_K";
    case WeightType::Q6_K: return "Q6_K";
    }
    return "unknown";
}

std::size_t block_values(WeightType type) { return geometry(type).values; }

std::size_t block_bytes(WeightType type) { return geometry(type).bytes; }

std::size_t weight_row_bytes(WeightType type, std::size_t cols) {
    const Geometry g = geometry(type);
    if (cols % g.values != 0)
        throw std::invalid_argument(std::string(to_string(type)) + " rows hold whole blocks of " +
                                    std::to_string(g.values) + " values, but a row has " +
                                    std::to_string(cols));
    return cols / g.values * g.bytes;
}

} // namespace kvscope::kernels::cpu

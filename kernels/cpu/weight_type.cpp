#include "kernels/cpu/weight_type.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/quant_blocks.h"

namespace kvscope::kernels::cpu {
namespace {

struct Geometry {
    WeightType type;
    std::string_view name;
    std::size_t values;
    std::size_t bytes;
};

constexpr Geometry kGeometry[] = {
    {WeightType::F32, "F32", 1, 4},
    {WeightType::F16, "F16", 1, 2},
    {WeightType::Q4_0, "Q4_0", kQuantBlockValues, sizeof(BlockQ4_0)},
    {WeightType::Q4_1, "Q4_1", kQuantBlockValues, sizeof(BlockQ4_1)},
    {WeightType::Q5_0, "Q5_0", kQuantBlockValues, sizeof(BlockQ5_0)},
    {WeightType::Q5_1, "Q5_1", kQuantBlockValues, sizeof(BlockQ5_1)},
    {WeightType::Q8_0, "Q8_0", kQuantBlockValues, sizeof(BlockQ8_0)},
    {WeightType::Q2_K, "Q2_K", kSuperBlockValues, sizeof(BlockQ2_K)},
    {WeightType::Q3_K, "Q3_K", kSuperBlockValues, sizeof(BlockQ3_K)},
    {WeightType::Q4_K, "Q4_K", kSuperBlockValues, sizeof(BlockQ4_K)},
    {WeightType::Q5_K, "Q5_K", kSuperBlockValues, sizeof(BlockQ5_K)},
    {WeightType::Q6_K, "Q6_K", kSuperBlockValues, sizeof(BlockQ6_K)},
    {WeightType::IQ4_NL, "IQ4_NL", kQuantBlockValues, sizeof(BlockIQ4_NL)},
    {WeightType::IQ4_XS, "IQ4_XS", kSuperBlockValues, sizeof(BlockIQ4_XS)},
    {WeightType::BF16, "BF16", 1, 2},
    {WeightType::MXFP4, "MXFP4", kQuantBlockValues, sizeof(BlockMXFP4)},
};
static_assert(std::size(kGeometry) == std::size(kWeightTypes));

const Geometry* find(WeightType type) {
    const auto it = std::find_if(std::begin(kGeometry), std::end(kGeometry),
                                 [type](const Geometry& g) { return g.type == type; });
    return it == std::end(kGeometry) ? nullptr : it;
}

const Geometry& geometry(WeightType type) {
    if (const Geometry* g = find(type))
        return *g;
    throw std::invalid_argument("unsupported weight type " +
                                std::to_string(static_cast<std::uint32_t>(type)));
}

} // namespace

bool is_weight_type(std::uint32_t raw) { return find(static_cast<WeightType>(raw)) != nullptr; }

std::string_view to_string(WeightType type) {
    const Geometry* g = find(type);
    return g != nullptr ? g->name : "unknown";
}

std::size_t block_values(WeightType type) { return geometry(type).values; }

std::size_t block_bytes(WeightType type) { return geometry(type).bytes; }

std::size_t weight_row_bytes(WeightType type, std::size_t cols) {
    const Geometry& g = geometry(type);
    if (cols % g.values != 0)
        throw std::invalid_argument(std::string(to_string(type)) + " rows hold whole blocks of " +
                                    std::to_string(g.values) + " values, but a row has " +
                                    std::to_string(cols));
    return cols / g.values * g.bytes;
}

} // namespace kvscope::kernels::cpu

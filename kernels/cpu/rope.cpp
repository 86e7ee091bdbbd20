#include "kernels/cpu/rope.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvscope::kernels::cpu {

void rope(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim,
          std::uint32_t position, float theta_base, RopeStyle style) {
    if (rot_dim % 2 != 0 || rot_dim > head_dim)
        throw std::invalid_argument("rope: rot_dim must be even and at most head_dim (" +
                                    std::to_string(rot_dim) + " vs head_dim " +
                                    std::to_string(head_dim) + ")");
    const std::size_t pairs = rot_dim / 2;
    // One table per call, shared by all heads.
    thread_local std::vector<float> cos_sin;
    cos_sin.resize(2 * pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
        const double exponent = -2.0 * static_cast<double>(i) / static_cast<double>(rot_dim);
        const double angle = position * std::pow(static_cast<double>(theta_base), exponent);
        cos_sin[2 * i] = static_cast<float>(std::cos(angle));
        cos_sin[2 * i + 1] = static_cast<float>(std::sin(angle));
    }
    // Adjacent pairs are (2i, 2i+1); halves are (i, i + pairs).
    const std::size_t stride = style == RopeStyle::AdjacentPairs ? 2 : 1;
    const std::size_t partner = style == RopeStyle::AdjacentPairs ? 1 : pairs;
    for (std::size_t h = 0; h < n_heads; ++h) {
        float* head = x + h * head_dim;
        for (std::size_t i = 0; i < pairs; ++i) {
            float& a = head[i * stride];
            float& b = head[i * stride + partner];
            const float c = cos_sin[2 * i];
            const float s = cos_sin[2 * i + 1];
            const float a0 = a;
            a = a0 * c - b * s;
            b = a0 * s + b * c;
        }
    }
}

} // namespace kvscope::kernels::cpu

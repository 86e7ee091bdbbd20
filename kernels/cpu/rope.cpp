#include "kernels/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace kvscope::kernels::cpu {
namespace {

void check_rot_dim(std::size_t rot_dim, std::size_t head_dim) {
    if (rot_dim % 2 != 0 || rot_dim > head_dim)
        throw std::invalid_argument("rope: rot_dim must be even and at most head_dim (" +
                                    std::to_string(rot_dim) + " vs head_dim " +
                                    std::to_string(head_dim) + ")");
}

bool positive(float x) { return std::isfinite(x) && x > 0.0f; }

void check_frequencies(const RopeFrequencies& f, std::size_t rot_dim) {
    if (!positive(f.theta_base))
        throw std::invalid_argument("rope: theta_base must be finite and > 0 (got " + std::to_string(f.theta_base) + ")");
    if (!positive(f.freq_scale))
        throw std::invalid_argument("rope: freq_scale must be finite and > 0 (got " + std::to_string(f.freq_scale) + ")");
    if (!std::isfinite(f.attn_factor))
        throw std::invalid_argument("rope: attn_factor must be finite");
    if (f.factors != nullptr)
        for (std::size_t i = 0; i < rot_dim / 2; ++i)
            if (!positive(f.factors[i]))
                throw std::invalid_argument("rope: frequency factor " + std::to_string(i) + " is " +
                                            std::to_string(f.factors[i]) + ", not finite and > 0");
    if (!f.yarn)
        return;
    if (f.yarn->original_context == 0)
        throw std::invalid_argument("rope: YaRN needs the original context length (rope.scaling.original_context_length)");
    if (!positive(f.yarn->beta_fast) || !positive(f.yarn->beta_slow))
        throw std::invalid_argument("rope: YaRN's beta_fast and beta_slow must be finite and > 0 (got " +
                                    std::to_string(f.yarn->beta_fast) + ", " + std::to_string(f.yarn->beta_slow) + ")");
    if (!std::isfinite(f.yarn->log_mul))
        throw std::invalid_argument("rope: YaRN's log multiplier must be finite");
}

// The pair index at which YaRN's ramp starts or ends for a rotation
// `beta` times around within the original context (ggml_rope_yarn_corr_dim),
// in float as ggml computes it, since it is floored or ceiled next.
float yarn_corr_dim(std::size_t rot_dim, std::uint32_t original_context, float beta, float theta_base) {
    return static_cast<float>(rot_dim) *
           std::log(static_cast<float>(original_context) / (beta * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(theta_base));
}

// Each pair's weight of its trained (extrapolated) frequency against the
// scaled one: 1 below the ramp, 0 above it (RopeYarn).
std::vector<double> yarn_ramp(const RopeFrequencies& f, std::size_t rot_dim) {
    const RopeYarn& y = *f.yarn;
    const float low = std::max(0.0f, std::floor(yarn_corr_dim(rot_dim, y.original_context, y.beta_fast, f.theta_base)));
    const float high = std::min(static_cast<float>(rot_dim - 1),
                                std::ceil(yarn_corr_dim(rot_dim, y.original_context, y.beta_slow, f.theta_base)));
    std::vector<double> ramp(rot_dim / 2);
    for (std::size_t i = 0; i < ramp.size(); ++i) {
        const double x = (static_cast<double>(i) - low) / std::max(0.001, static_cast<double>(high) - low);
        ramp[i] = 1.0 - std::clamp(x, 0.0, 1.0);
    }
    return ramp;
}

// What cos and sin are multiplied by (RopeYarn's net factor with YaRN).
double magnitude(const RopeFrequencies& f) {
    if (!f.yarn)
        return f.attn_factor;
    const double s = 1.0 / f.freq_scale;
    const auto m = [s](double k) { return s <= 1.0 ? 1.0 : 1.0 + 0.1 * k * std::log(s); };
    return f.attn_factor * m(1.0) / (f.yarn->log_mul != 0.0f ? m(f.yarn->log_mul) : 1.0);
}

} // namespace

void rope_angles(const std::uint32_t* positions, std::size_t count, std::size_t rot_dim, float theta_base,
                 std::vector<float>& table) {
    rope_angles(positions, count, rot_dim, RopeFrequencies{theta_base}, table);
}

void rope_angles(const std::uint32_t* positions, std::size_t count, std::size_t rot_dim,
                 const RopeFrequencies& f, std::vector<float>& table) {
    if (rot_dim % 2 != 0) // no head_dim here: rope_rotate checks rot_dim against it
        throw std::invalid_argument("rope: rot_dim must be even (got " + std::to_string(rot_dim) + ")");
    check_frequencies(f, rot_dim);
    const std::size_t pairs = rot_dim / 2;
    // Each pair's angle per position, in ggml's order of operations: theta_i
    // divided by its factor, then scaled (with YaRN, blended with itself
    // unscaled by the ramp).
    const std::vector<double> ramp = f.yarn ? yarn_ramp(f, rot_dim) : std::vector<double>(pairs, 0.0);
    std::vector<double> frequency(pairs);
    for (std::size_t i = 0; i < pairs; ++i) {
        const double theta = std::pow(static_cast<double>(f.theta_base),
                                      -2.0 * static_cast<double>(i) / static_cast<double>(rot_dim));
        const double trained = theta / (f.factors != nullptr ? f.factors[i] : 1.0);
        const double scaled = trained * f.freq_scale;
        frequency[i] = scaled * (1.0 - ramp[i]) + trained * ramp[i]; // ramp 0: scaled, exactly
    }
    const double m = magnitude(f);
    table.resize(count * rot_dim);
    float* row = table.data();
    for (std::size_t t = 0; t < count; ++t)
        for (std::size_t i = 0; i < pairs; ++i, row += 2) {
            const double angle = positions[t] * frequency[i];
            row[0] = static_cast<float>(std::cos(angle) * m);
            row[1] = static_cast<float>(std::sin(angle) * m);
        }
}

void rope_rotate(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim, const float* cos_sin,
                 RopeStyle style) {
    check_rot_dim(rot_dim, head_dim);
    const std::size_t pairs = rot_dim / 2;
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

void rope(float* x, std::size_t n_heads, std::size_t head_dim, std::size_t rot_dim,
          std::uint32_t position, float theta_base, RopeStyle style) {
    check_rot_dim(rot_dim, head_dim);
    thread_local std::vector<float> cos_sin;
    rope_angles(&position, 1, rot_dim, theta_base, cos_sin);
    rope_rotate(x, n_heads, head_dim, rot_dim, cos_sin.data(), style);
}

} // namespace kvscope::kernels::cpu

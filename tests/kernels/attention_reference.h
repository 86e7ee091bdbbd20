// Shared by the attention tests: causal attention computed naively in
// double precision over contiguous K/V, the independent reference the
// kernels are checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace kernel_test {

struct AttentionShape {
    std::uint32_t n_kv_heads;
    std::uint32_t n_heads;
    std::uint32_t head_dim;
    std::uint32_t ctx_len;
    std::uint32_t n_q; // queries at positions [ctx_len - n_q, ctx_len)
};

// q: n_q x n_heads x head_dim; k, v: [position][kv_head][dim]. Returns
// n_q x n_heads x head_dim.
inline std::vector<double> reference_attention(const AttentionShape& s, const std::vector<float>& q,
                                               const std::vector<float>& k, const std::vector<float>& v) {
    const std::size_t dim = s.head_dim;
    const std::uint32_t group = s.n_heads / s.n_kv_heads;
    std::vector<double> out(std::size_t{s.n_q} * s.n_heads * dim);
    for (std::uint32_t i = 0; i < s.n_q; ++i)
        for (std::uint32_t h = 0; h < s.n_heads; ++h) {
            const std::uint32_t count = s.ctx_len - s.n_q + i + 1;
            const float* qh = q.data() + (std::size_t{i} * s.n_heads + h) * dim;
            const std::size_t kv_head = h / group;
            std::vector<double> scores(count);
            for (std::uint32_t p = 0; p < count; ++p) {
                const float* kp = k.data() + (std::size_t{p} * s.n_kv_heads + kv_head) * dim;
                double dot = 0.0;
                for (std::size_t d = 0; d < dim; ++d)
                    dot += static_cast<double>(qh[d]) * kp[d];
                scores[p] = dot / std::sqrt(static_cast<double>(dim));
            }
            const double max = *std::max_element(scores.begin(), scores.end());
            double sum = 0.0;
            for (double& x : scores)
                sum += x = std::exp(x - max);
            double* o = out.data() + (std::size_t{i} * s.n_heads + h) * dim;
            for (std::uint32_t p = 0; p < count; ++p) {
                const float* vp = v.data() + (std::size_t{p} * s.n_kv_heads + kv_head) * dim;
                for (std::size_t d = 0; d < dim; ++d)
                    o[d] += scores[p] / sum * vp[d];
            }
        }
    return out;
}

} // namespace kernel_test

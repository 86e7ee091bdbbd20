// Shared by the attention tests: causal attention computed naively in
// double precision over contiguous K/V, the independent reference the
// kernels are checked against, with the options of paged_attention.h's
// AttentionOptions written out from their definitions.
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

// How scores are formed: score = (q . k) * scale (0: 1 / sqrt(head_dim));
// softcap > 0: softcap * tanh(score / softcap); window > 0: the query at
// position i sees only keys p with i - p < window (and p <= i). sinks: one
// logit per query head that joins its softmax's denominator with no value
// (empty: none), out = sum_p exp(s_p - M) v_p / (exp(sink - M) + sum_p
// exp(s_p - M)), M the max of the scores and the sink.
struct ReferenceOptions {
    double scale = 0.0;
    double softcap = 0.0;
    std::uint32_t window = 0;
    std::vector<double> sinks;
};

// q: n_q x n_heads x head_dim; k, v: [position][kv_head][dim]. Returns
// n_q x n_heads x head_dim. Keys a query does not see are never read.
inline std::vector<double> reference_attention(const AttentionShape& s, const std::vector<float>& q,
                                               const std::vector<float>& k, const std::vector<float>& v,
                                               const ReferenceOptions& options = {}) {
    const std::size_t dim = s.head_dim;
    const std::uint32_t group = s.n_heads / s.n_kv_heads;
    const double scale = options.scale > 0.0 ? options.scale : 1.0 / std::sqrt(static_cast<double>(dim));
    std::vector<double> out(std::size_t{s.n_q} * s.n_heads * dim);
    for (std::uint32_t i = 0; i < s.n_q; ++i)
        for (std::uint32_t h = 0; h < s.n_heads; ++h) {
            const std::uint32_t position = s.ctx_len - s.n_q + i;
            const std::uint32_t first =
                options.window > 0 && position >= options.window ? position - options.window + 1 : 0;
            const float* qh = q.data() + (std::size_t{i} * s.n_heads + h) * dim;
            const std::size_t kv_head = h / group;
            std::vector<double> scores(position + 1 - first);
            for (std::uint32_t p = first; p <= position; ++p) {
                const float* kp = k.data() + (std::size_t{p} * s.n_kv_heads + kv_head) * dim;
                double dot = 0.0;
                for (std::size_t d = 0; d < dim; ++d)
                    dot += static_cast<double>(qh[d]) * kp[d];
                double score = dot * scale;
                if (options.softcap > 0.0)
                    score = options.softcap * std::tanh(score / options.softcap);
                scores[p - first] = score;
            }
            double max = *std::max_element(scores.begin(), scores.end());
            if (!options.sinks.empty())
                max = std::max(max, options.sinks[h]);
            double sum = options.sinks.empty() ? 0.0 : std::exp(options.sinks[h] - max);
            for (double& x : scores)
                sum += x = std::exp(x - max);
            double* o = out.data() + (std::size_t{i} * s.n_heads + h) * dim;
            for (std::uint32_t p = first; p <= position; ++p) {
                const float* vp = v.data() + (std::size_t{p} * s.n_kv_heads + kv_head) * dim;
                for (std::size_t d = 0; d < dim; ++d)
                    o[d] += scores[p - first] / sum * vp[d];
            }
        }
    return out;
}

} // namespace kernel_test

// kvscope_float64_forward MODEL.gguf IDS_FILE TOPK > OUT.txt
//
// The model's forward pass in double precision: the exact answer that
// kvscope and llama.cpp both round, so that where the two engines disagree
// (tests/runtime/test_llamacpp_match) the stored float64 rows say which one
// is nearer to what the model computes. IDS_FILE holds token ids separated
// by commas or white space; the output has one line per position: the TOPK
// most likely next tokens after it, "ID:LOGPROB" (4 decimals), most likely
// first, ties by lower id: the rows of tests/data/llamacpp's references
// (tests/data/README.md; make_float64_references.sh there runs this).
//
// Independent of the engine's arithmetic: every step that ModelConfig and
// LayerWeights describe (embedding scale, RMSNorm, biases, QK-norm, RoPE of
// each layer's kind, windows, attention scale and soft-caps, post-norms,
// SwiGLU/GeGLU, tied output) is a plain loop here in double, with no KV
// cache and no f16 anywhere: K and V stay double. From the engine it takes
// only the reading of the file (Model: GgufFile, read_model_config and
// ModelWeights, which also splits Phi-3's fused attn_qkv and gate/up
// matrices into their parts) and dequantize_row (exact for F16; for a
// quantized type its floats are the weights both engines multiply by).
// What the mixtures of experts add (qwen3moe, gpt-oss) it reads from the
// file itself, as llama.cpp's loader names it: the router and the experts,
// gpt-oss's attention sinks and attn_output bias, the expert counts and
// YaRN's betas; and it computes them as llama.cpp's graph defines them
// (src/llama-graph.cpp build_moe_ffn, ggml's rope_yarn): routing, top-k,
// experts, the clamped SwiGLU, sinks, YaRN.
// Slow (tens of seconds on tests/data/llamacpp's models, on every core):
// a tool for making reference data, not a test.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/kv/kv_ids.h"
#include "engine/model/ggml_type.h"
#include "engine/model/model_config.h"
#include "engine/runtime/model.h"

using namespace kvscope;

namespace {

// `rows` rows of `width` doubles, one per position (activations) or per
// output (a weight matrix).
struct Rows {
    std::size_t rows = 0, width = 0;
    std::vector<double> values;

    Rows(std::size_t r, std::size_t w) : rows(r), width(w), values(r * w, 0.0) {}
    double* row(std::size_t i) { return values.data() + i * width; }
    const double* row(std::size_t i) const { return values.data() + i * width; }
};

// Runs body(i) for every i < count, spread over the machine's cores.
template <class Body>
void parallel_for(std::size_t count, const Body& body) {
    const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (std::size_t i = t; i < count; i += threads)
                body(i);
        });
    for (std::thread& thread : pool)
        thread.join();
}

// A matrix as the file stores it: `rows` rows of `cols` values of `type`.
struct MatrixView {
    GgmlType type = GgmlType::F32;
    const std::byte* data = nullptr;
    std::size_t rows = 0, cols = 0, row_bytes = 0;
};

MatrixView view(const WeightMatrix& w) {
    return {static_cast<GgmlType>(w.type), static_cast<const std::byte*>(w.data), w.rows, w.cols, w.row_bytes};
}

// `rows` rows from row `first` of a tensor seen as 2-D (ggml's dims[0]
// values a row): one expert's matrix within a 3-D tensor of all of them.
MatrixView rows_of(const GgufTensorInfo& t, std::size_t first, std::size_t rows) {
    const std::size_t bytes = row_bytes(t.type, t.dims[0]);
    return {t.type, t.data + first * bytes, rows, t.dims[0], bytes};
}

// A weight matrix's values in double, dequantized row by row.
Rows expand(const MatrixView& w) {
    Rows m(w.rows, w.cols);
    std::vector<float> row(w.cols);
    for (std::size_t r = 0; r < w.rows; ++r) {
        dequantize_row(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
        std::copy(row.begin(), row.end(), m.row(r));
    }
    return m;
}

// out[t][r] = sum_c w[r][c] x[t][c]. Blocks of 16 weight rows go to the
// threads, so a block stays in cache while every position passes it.
Rows multiply(const MatrixView& weights, const Rows& x) {
    const Rows w = expand(weights);
    if (w.width != x.width)
        throw Error("a matrix of " + std::to_string(w.width) + " columns applied to rows of " +
                    std::to_string(x.width));
    Rows out(x.rows, w.rows);
    constexpr std::size_t kBlock = 16;
    parallel_for((w.rows + kBlock - 1) / kBlock, [&](std::size_t block) {
        const std::size_t end = std::min(w.rows, (block + 1) * kBlock);
        for (std::size_t t = 0; t < x.rows; ++t)
            for (std::size_t r = block * kBlock; r < end; ++r)
                out.row(t)[r] = std::inner_product(w.row(r), w.row(r) + w.width, x.row(t), 0.0);
    });
    return out;
}

Rows multiply(const WeightMatrix& weights, const Rows& x) { return multiply(view(weights), x); }

void add_bias(Rows& x, const float* bias) {
    if (!bias)
        return;
    for (std::size_t t = 0; t < x.rows; ++t)
        for (std::size_t i = 0; i < x.width; ++i)
            x.row(t)[i] += bias[i];
}

// RMSNorm of every `width`-wide piece of x (a whole row, or one head for
// QK-norm): v * w / sqrt(mean(v^2) + eps).
void rms_norm(Rows& x, std::size_t width, const float* weight, double eps) {
    for (std::size_t start = 0; start < x.values.size(); start += width) {
        double* v = x.values.data() + start;
        const double square_sum = std::inner_product(v, v + width, v, 0.0);
        const double inverse = 1.0 / std::sqrt(square_sum / double(width) + eps);
        for (std::size_t i = 0; i < width; ++i)
            v[i] = v[i] * inverse * weight[i];
    }
}

Rows rms_normed(const Rows& x, const float* weight, double eps) {
    Rows y = x;
    rms_norm(y, y.width, weight, eps);
    return y;
}

// YaRN (rope.scaling.type "yarn", gpt-oss) as ggml's rope_yarn computes
// it: pair i's angle mixes the interpolated angle (divided by `factor`)
// with the trained one by a ramp that is 1 (trained) below pair `low` and
// 0 (interpolated) from pair `high`, and the rotation's magnitude is
// 1 + 0.1 ln(factor) (llama.cpp's yarn_attn_factor cancels its own
// get_mscale against rope_yarn's, leaving this). low and high are the
// pairs that turn beta_fast and beta_slow times over the original
// context, floored and ceiled (ggml_rope_yarn_corr_dims).
struct Yarn {
    double factor = 1.0;
    double low = 0.0, high = 0.0;

    // Mix of pair i's trained angle: 1 keeps it, 0 interpolates fully.
    double ramp(std::size_t i) const {
        return 1.0 - std::clamp((double(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
    }
    double magnitude() const { return 1.0 + 0.1 * std::log(factor); }
};

// The pair that turns `rotations` times over `context` positions
// (ggml_rope_yarn_corr_dim).
double yarn_pair(double rotations, double context, double rot, double base) {
    return rot * std::log(context / (rotations * 2.0 * M_PI)) / (2.0 * std::log(base));
}

// The model's YaRN from its file (the betas are llama.cpp's defaults where
// absent); nullopt for other scalings. Throws for YaRN variants llama.cpp
// computes otherwise (a log multiplier, a set extrapolation or attention
// factor), which no model here has.
std::optional<Yarn> read_yarn(const GgufFile& f, const ModelConfig& c) {
    if (!c.rope_scaling || c.rope_scaling->type != "yarn")
        return std::nullopt;
    const std::string a = c.architecture + ".rope.scaling.";
    for (const char* key : {"yarn_log_multiplier", "yarn_ext_factor", "yarn_attn_factor"})
        if (f.get_float(a + key))
            throw Error(std::string("YaRN with rope.scaling.") + key + " is not supported");
    if (c.rope_scaling->original_context == 0)
        throw Error("YaRN needs rope.scaling.original_context_length");
    const double context = double(c.rope_scaling->original_context), rot = c.rope_dims;
    Yarn y;
    y.factor = c.rope_scaling->factor;
    y.low = std::max(0.0, std::floor(yarn_pair(f.get_float(a + "yarn_beta_fast").value_or(32.0), context, rot,
                                               c.rope_theta)));
    y.high = std::min(rot - 1, std::ceil(yarn_pair(f.get_float(a + "yarn_beta_slow").value_or(1.0), context, rot,
                                                   c.rope_theta)));
    return y;
}

// Position scaling of a layer: 1 / the model's linear scaling factor where
// the layer is scaled. YaRN's is `yarn`'s (on every layer: llama.cpp's
// gpt-oss scales its window layers as its others). Other scaling types
// change angles beyond this formula; the engine refuses them too (Runner).
double freq_scale(const ModelConfig& c, const LayerAttention& a, const std::optional<Yarn>& yarn) {
    if (yarn || !c.rope_scaling || c.rope_scaling->factor == 1.0)
        return 1.0;
    if (c.rope_scaling->type != "linear")
        throw Error("RoPE scaling '" + c.rope_scaling->type + "' is not supported");
    return a.rope_scaled ? 1.0 / c.rope_scaling->factor : 1.0;
}

// Rotates the first rope_dims values of each head of every row by its
// position, as ggml's rope: pair i turns by
//   position * base^(-2i / rope_dims) / factors[i] * freq_scale,
// its cos and sin times rope_attn_factor (LongRoPE), or YaRN's mix of that
// angle and its interpolation, with YaRN's magnitude; pairs are (2i, 2i+1)
// or, NeoX style, (i, i + rope_dims / 2).
void rotate(Rows& x, const ModelConfig& c, const LayerAttention& a, const float* factors,
            const std::optional<Yarn>& yarn) {
    const std::size_t rot = c.rope_dims, half = rot / 2;
    const double scale = freq_scale(c, a, yarn);
    const double magnitude = c.rope_attn_factor * (yarn ? yarn->magnitude() : 1.0);
    const bool neox = c.rope_style == RopeStyle::NeoXHalves;
    for (std::size_t pos = 0; pos < x.rows; ++pos)
        for (std::size_t i = 0; i < half; ++i) {
            const double trained = double(pos) * std::pow(a.rope_theta, -2.0 * double(i) / double(rot)) /
                                   (factors ? double(factors[i]) : 1.0) * scale;
            const double angle =
                yarn ? trained / yarn->factor * (1.0 - yarn->ramp(i)) + trained * yarn->ramp(i) : trained;
            const double cos = magnitude * std::cos(angle), sin = magnitude * std::sin(angle);
            const std::size_t first = neox ? i : 2 * i, second = neox ? i + half : 2 * i + 1;
            for (std::size_t head = 0; head < x.width / c.head_dim; ++head) {
                double* h = x.row(pos) + head * c.head_dim;
                const double u = h[first], v = h[second];
                h[first] = u * cos - v * sin;
                h[second] = u * sin + v * cos;
            }
        }
}

// Causal attention of every position's query heads over the keys it sees
// (within the layer's window), its scores scaled and soft-capped; query
// head h reads KV head h / (n_heads / n_kv_heads), as llama.cpp groups them.
// Where `sinks` (gpt-oss), head h's softmax denominator also holds
// exp(sinks[h]), a logit with no value.
Rows attend(const Rows& q, const Rows& k, const Rows& v, const ModelConfig& c, const LayerAttention& a,
            const float* sinks) {
    const std::size_t hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
    const double scale = c.attention_scale > 0 ? c.attention_scale : 1.0 / std::sqrt(double(hd));
    Rows out(q.rows, q.width);
    parallel_for(q.rows, [&](std::size_t t) {
        const std::size_t first = a.window > 0 && t >= a.window ? t - a.window + 1 : 0;
        std::vector<double> weights(t + 1 - first);
        for (std::size_t h = 0; h < c.n_heads; ++h) {
            const double* query = q.row(t) + h * hd;
            const std::size_t kv = (h / group) * hd;
            for (std::size_t j = first; j <= t; ++j) {
                double s = std::inner_product(query, query + hd, k.row(j) + kv, 0.0) * scale;
                weights[j - first] = c.attn_softcap > 0 ? c.attn_softcap * std::tanh(s / c.attn_softcap) : s;
            }
            const double max = std::max(*std::max_element(weights.begin(), weights.end()),
                                        sinks ? double(sinks[h]) : -INFINITY);
            double sum = sinks ? std::exp(double(sinks[h]) - max) : 0.0;
            for (double& w : weights) {
                w = std::exp(w - max);
                sum += w;
            }
            double* o = out.row(t) + h * hd;
            for (std::size_t j = first; j <= t; ++j)
                for (std::size_t i = 0; i < hd; ++i)
                    o[i] += weights[j - first] / sum * v.row(j)[kv + i];
        }
    });
    return out;
}

// What a layer adds beyond LayerWeights, read from the file by the names
// llama.cpp's loader gives them; null where the model has none.
struct LayerExtras {
    const float* o_bias = nullptr; // attn_output.bias (gpt-oss)
    const float* sinks = nullptr;  // attn_sinks, n_heads (gpt-oss)
    // A mixture-of-experts FFN: the router {dim, experts} (+ bias), each
    // of gate/up {dim, ffn, experts} and down {ffn, dim, experts} (+ their
    // biases {ffn or dim, experts}).
    const GgufTensorInfo* router = nullptr;
    const float* router_bias = nullptr;
    const GgufTensorInfo *gate = nullptr, *up = nullptr, *down = nullptr;
    const float *gate_bias = nullptr, *up_bias = nullptr, *down_bias = nullptr;
};

// The F32 tensor `name`'s values, nullptr where the file has none.
const float* f32_tensor(const GgufFile& f, const std::string& name) {
    const GgufTensorInfo* t = f.find_tensor(name);
    if (t && t->type != GgmlType::F32)
        throw Error(name + " is " + std::string(to_string(t->type)) + ", not F32");
    return t ? reinterpret_cast<const float*>(t->data) : nullptr;
}

const GgufTensorInfo& required_tensor(const GgufFile& f, const std::string& name) {
    const GgufTensorInfo* t = f.find_tensor(name);
    if (!t)
        throw Error("the file has no " + name);
    return *t;
}

LayerExtras read_extras(const GgufFile& f, std::uint32_t l, bool moe) {
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    LayerExtras e;
    e.o_bias = f32_tensor(f, name("attn_output.bias"));
    e.sinks = f32_tensor(f, name("attn_sinks.weight"));
    if (!moe)
        return e;
    e.router = &required_tensor(f, name("ffn_gate_inp.weight"));
    e.router_bias = f32_tensor(f, name("ffn_gate_inp.bias"));
    e.gate = &required_tensor(f, name("ffn_gate_exps.weight"));
    e.up = &required_tensor(f, name("ffn_up_exps.weight"));
    e.down = &required_tensor(f, name("ffn_down_exps.weight"));
    e.gate_bias = f32_tensor(f, name("ffn_gate_exps.bias"));
    e.up_bias = f32_tensor(f, name("ffn_up_exps.bias"));
    e.down_bias = f32_tensor(f, name("ffn_down_exps.bias"));
    return e;
}

// The attention sublayer's output for the residual stream.
Rows attention_block(const Rows& x, const LayerWeights& w, const LayerExtras& e, const ModelConfig& c,
                     const LayerAttention& a, const float* rope_factors, const std::optional<Yarn>& yarn) {
    const Rows xn = rms_normed(x, w.attn_norm, c.norm_eps);
    Rows q = multiply(w.q, xn), k = multiply(w.k, xn), v = multiply(w.v, xn);
    add_bias(q, w.q_bias);
    add_bias(k, w.k_bias);
    add_bias(v, w.v_bias);
    if (w.q_norm) { // QK-norm: each head on its own, before RoPE
        rms_norm(q, c.head_dim, w.q_norm, c.norm_eps);
        rms_norm(k, c.head_dim, w.k_norm, c.norm_eps);
    }
    if (a.rope) {
        rotate(q, c, a, rope_factors, yarn);
        rotate(k, c, a, rope_factors, yarn);
    }
    Rows out = multiply(w.o, attend(q, k, v, c, a, e.sinks));
    add_bias(out, e.o_bias);
    if (w.attn_post_norm)
        rms_norm(out, out.width, w.attn_post_norm, c.norm_eps);
    return out;
}

double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// The FFN sublayer's output: down(act(gate) * up), post-normed for Gemma.
Rows ffn_block(const Rows& x, const LayerWeights& w, const ModelConfig& c) {
    const Rows xn = rms_normed(x, w.ffn_norm, c.norm_eps);
    Rows gate = multiply(w.gate, xn);
    const Rows up = multiply(w.up, xn);
    const bool gelu = c.ffn_activation == FfnActivation::GeluTanh;
    for (std::size_t i = 0; i < gate.values.size(); ++i)
        gate.values[i] = (gelu ? gelu_tanh(gate.values[i]) : silu(gate.values[i])) * up.values[i];
    Rows out = multiply(w.down, gate);
    if (w.ffn_post_norm)
        rms_norm(out, out.width, w.ffn_post_norm, c.norm_eps);
    return out;
}

// A mixture of experts as the file says it: `used` of `count` experts a
// token; gpt-oss's gate (its clamped SwiGLU) or SwiGLU.
struct Experts {
    std::uint32_t count = 0, used = 0; // count 0: a dense FFN
    bool clamped_swiglu = false;
};

Experts read_experts(const GgufFile& f, const ModelConfig& c) {
    Experts x;
    x.count = static_cast<std::uint32_t>(f.get_uint(c.architecture + ".expert_count").value_or(0));
    x.used = static_cast<std::uint32_t>(f.get_uint(c.architecture + ".expert_used_count").value_or(0));
    x.clamped_swiglu = c.architecture == "gpt-oss";
    if (x.count != 0 && (x.used == 0 || x.used > x.count))
        throw Error("expert_used_count " + std::to_string(x.used) + " of " + std::to_string(x.count) + " experts");
    return x;
}

// gpt-oss's clamped SwiGLU: x = min(gate, 7), y = clamp(up, -7, 7),
// x sigmoid(1.702 x) (y + 1).
double clamped_swiglu(double gate, double up) {
    const double x = std::min(gate, 7.0), y = std::clamp(up, -7.0, 7.0);
    return x / (1.0 + std::exp(-1.702 * x)) * (y + 1.0);
}

// Each position's experts and their weights. Both families' gatings are
// this one in exact arithmetic: qwen3moe's softmax over every expert, top
// k, renormalised to 1, gives each picked expert exp(logit) over the sum
// of the k picked exp(logit)s, as gpt-oss's top k of the logits, then
// softmax over those k, does; the top k of the probabilities are those of
// the logits. Ties go to the lower expert.
std::vector<std::vector<std::pair<std::uint32_t, double>>> route(const Rows& xn, const LayerExtras& e,
                                                                 const Experts& x) {
    Rows logits = multiply(rows_of(*e.router, 0, x.count), xn);
    add_bias(logits, e.router_bias);
    std::vector<std::vector<std::pair<std::uint32_t, double>>> routes(xn.rows);
    for (std::size_t t = 0; t < xn.rows; ++t) {
        const double* l = logits.row(t);
        std::vector<std::uint32_t> order(x.count);
        std::iota(order.begin(), order.end(), 0u);
        std::partial_sort(order.begin(), order.begin() + x.used, order.end(),
                          [&](std::uint32_t a, std::uint32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
        double sum = 0;
        for (std::uint32_t i = 0; i < x.used; ++i)
            sum += std::exp(l[order[i]] - l[order[0]]);
        for (std::uint32_t i = 0; i < x.used; ++i)
            routes[t].emplace_back(order[i], std::exp(l[order[i]] - l[order[0]]) / sum);
    }
    return routes;
}

// The rows of x at `positions`.
Rows rows_at(const Rows& x, const std::vector<std::size_t>& positions) {
    Rows out(positions.size(), x.width);
    for (std::size_t i = 0; i < positions.size(); ++i)
        std::copy(x.row(positions[i]), x.row(positions[i]) + x.width, out.row(i));
    return out;
}

// A mixture-of-experts FFN's output: each position's picked experts,
// down(act(gate) * up) with their biases, weighted as route() says.
// Expert by expert, over the positions routed to it.
Rows moe_block(const Rows& x, const LayerWeights& w, const LayerExtras& e, const ModelConfig& c,
               const Experts& experts) {
    const Rows xn = rms_normed(x, w.ffn_norm, c.norm_eps);
    const auto routes = route(xn, e, experts);
    const std::size_t ffn = e.gate->dims[1], dim = x.width;
    Rows out(x.rows, dim);
    for (std::uint32_t expert = 0; expert < experts.count; ++expert) {
        std::vector<std::size_t> positions;
        std::vector<double> weights;
        for (std::size_t t = 0; t < routes.size(); ++t)
            for (const auto& [picked, weight] : routes[t])
                if (picked == expert) {
                    positions.push_back(t);
                    weights.push_back(weight);
                }
        if (positions.empty())
            continue;
        const Rows in = rows_at(xn, positions);
        Rows gate = multiply(rows_of(*e.gate, expert * ffn, ffn), in);
        Rows up = multiply(rows_of(*e.up, expert * ffn, ffn), in);
        add_bias(gate, e.gate_bias ? e.gate_bias + expert * ffn : nullptr);
        add_bias(up, e.up_bias ? e.up_bias + expert * ffn : nullptr);
        for (std::size_t i = 0; i < gate.values.size(); ++i)
            gate.values[i] = experts.clamped_swiglu ? clamped_swiglu(gate.values[i], up.values[i])
                                                    : silu(gate.values[i]) * up.values[i];
        Rows down = multiply(rows_of(*e.down, expert * dim, dim), gate);
        add_bias(down, e.down_bias ? e.down_bias + expert * dim : nullptr);
        for (std::size_t i = 0; i < positions.size(); ++i)
            for (std::size_t d = 0; d < dim; ++d)
                out.row(positions[i])[d] += weights[i] * down.row(i)[d];
    }
    return out;
}

Rows embed(const std::vector<TokenId>& ids, const ModelWeights& w, const ModelConfig& c) {
    Rows x(ids.size(), c.embedding_dim);
    std::vector<float> row(c.embedding_dim);
    for (std::size_t t = 0; t < ids.size(); ++t) {
        const auto id = static_cast<std::size_t>(ids[t]);
        dequantize_row(static_cast<GgmlType>(w.token_embd.type),
                       static_cast<const std::byte*>(w.token_embd.data) + id * w.token_embd.row_bytes, row.data(),
                       row.size());
        for (std::size_t i = 0; i < row.size(); ++i)
            x.row(t)[i] = double(row[i]) * c.embedding_scale;
    }
    return x;
}

// Every position's logits of the token sequence `ids`.
Rows forward(const Model& model, const std::vector<TokenId>& ids) {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    const std::optional<Yarn> yarn = read_yarn(model.file(), c);
    const Experts experts = read_experts(model.file(), c);
    Rows x = embed(ids, w, c);
    for (std::uint32_t l = 0; l < c.n_layers; ++l) {
        const LayerExtras extras = read_extras(model.file(), l, experts.count != 0);
        const Rows attention = attention_block(x, w.layers[l], extras, c, c.layers[l], w.rope_factors, yarn);
        std::transform(x.values.begin(), x.values.end(), attention.values.begin(), x.values.begin(),
                       std::plus<>());
        const Rows ffn = experts.count != 0 ? moe_block(x, w.layers[l], extras, c, experts)
                                            : ffn_block(x, w.layers[l], c);
        std::transform(x.values.begin(), x.values.end(), ffn.values.begin(), x.values.begin(), std::plus<>());
    }
    Rows logits = multiply(w.output, rms_normed(x, w.output_norm, c.norm_eps));
    if (c.final_softcap > 0)
        for (double& v : logits.values)
            v = c.final_softcap * std::tanh(v / c.final_softcap);
    return logits;
}

// One output line: the top_k tokens of a logit row with log-probabilities.
void print_top(const double* logits, std::size_t vocab, std::size_t top_k) {
    const double max = *std::max_element(logits, logits + vocab);
    double sum = 0;
    for (std::size_t i = 0; i < vocab; ++i)
        sum += std::exp(logits[i] - max);
    const double log_z = max + std::log(sum);
    std::vector<std::size_t> order(vocab);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top_k), order.end(),
                      [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (std::size_t i = 0; i < top_k; ++i)
        std::printf("%s%zu:%.4f", i ? " " : "", order[i], logits[order[i]] - log_z);
    std::printf("\n");
}

std::vector<TokenId> read_ids(const std::string& path, std::uint32_t vocab) {
    std::ifstream in(path);
    if (!in)
        throw Error("cannot read " + path);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream words(text);
    std::vector<TokenId> ids;
    std::string word;
    while (words >> word) {
        long id = -1;
        const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), id);
        if (error != std::errc() || end != word.data() + word.size() || id < 0 || id >= long(vocab))
            throw Error(path + ": '" + word + "' is not a token id of the vocabulary of " + std::to_string(vocab));
        ids.push_back(static_cast<TokenId>(id));
    }
    if (ids.empty())
        throw Error(path + " holds no token ids");
    return ids;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf IDS_FILE TOPK > OUT.txt\n", argv[0]);
        return 2;
    }
    try {
        const Model model(argv[1]);
        const std::uint32_t vocab = model.config().vocab_size;
        const long top_k = std::atol(argv[3]);
        if (top_k < 1 || top_k > long(vocab))
            throw Error(std::string("TOPK must be from 1 to the vocabulary size ") + std::to_string(vocab) + ", not " +
                        argv[3]);
        const Rows logits = forward(model, read_ids(argv[2], vocab));
        for (std::size_t t = 0; t < logits.rows; ++t)
            print_top(logits.row(t), logits.width, static_cast<std::size_t>(top_k));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 1;
    }
}

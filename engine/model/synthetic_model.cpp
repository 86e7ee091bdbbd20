#include "engine/model/synthetic_model.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/gguf_writer.h"
#include "engine/model/model_config.h"
#include "engine/model/quantize.h"

namespace kvscope {
namespace {

constexpr float kWeightStd = 0.02f;
// Biases (gpt-oss's on Q/K/V/O, router and experts): normal with this std, a
// tenth of the activations they add to (about 1 wide), so a runner that
// drops one computes something else while none outweighs its matrix.
constexpr float kBiasStd = 0.1f;
// The router's logits spread with about this standard deviation, so the
// k-th and (k+1)-th experts of a token are seldom a near-tie (a few
// thousandths apart, where two engines' rounding could pick differently)
// while the k picked still share the token's weight.
constexpr double kRouterLogitStd = 2.0;
// gpt-oss's experts' gate and up outputs spread with about this standard
// deviation, half its SwiGLU clamp (7), so some 3% of gate values and 5%
// of up values pass the clamp and a runner that leaves it out disagrees.
constexpr double kClampedExpertOutputStd = 3.5;
// Attention sinks: uniform in [0, this), up to the size of a head's largest
// scores. gpt-oss's scores spread with a standard deviation of about 2.3
// (1.25 times YaRN's magnitude squared, 1.35^2), so T keys hold about
// 14 T of the softmax's denominator and the largest of 128 scores is
// about 6: a sink of 8 takes some 60% of a window head's attention, one of
// 4 a few percent, and a runner that drops the sinks disagrees at every
// position, not only at the first few.
constexpr float kSinkMax = 8.0f;
// gpt-oss's config.json rope_scaling (also llama.cpp's defaults):
// dimensions rotating fewer than beta_slow times over the original
// context interpolate, more than beta_fast extrapolate.
constexpr float kYarnBetaFast = 32.0f;
constexpr float kYarnBetaSlow = 1.0f;

// The window pattern llama.cpp assumes when a file names none
// (load_swa_pattern's default per architecture); 0 for the others.
std::uint32_t default_swa_period(const std::string& architecture) {
    if (architecture == "gemma3")
        return 6;
    if (architecture == "gemma2" || architecture == "gpt-oss")
        return 2;
    return 0;
}

// What the file cannot say, because llama.cpp derives it from the
// architecture: a geometry that differs would be run as another model.
void check_writable(const ModelGeometry& g) {
    auto refuse = [&](const std::string& what) {
        throw Error("cannot write " + g.name + " as a " + g.architecture + " GGUF: " + what);
    };
    if (g.architecture == "smollm3" ? g.no_rope_period != 4 : g.no_rope_period != 0)
        refuse("llama.cpp leaves RoPE out of every 4th layer of smollm3 and of no layer elsewhere");
    if (g.query_pre_attn_scalar != 0 && g.query_pre_attn_scalar != g.head_dim())
        refuse("llama.cpp scales queries by 1/sqrt(head_dim) (query_pre_attn_scalar " +
               std::to_string(g.query_pre_attn_scalar) + ")");
    if (g.architecture == "gemma2" && !g.tied_embeddings)
        refuse("llama.cpp's gemma2 has no output matrix of its own");
    if (g.has_fused_matrices() && g.q_dim() != g.dim)
        refuse("phi3's query width must be the embedding width");
    if (g.has_longrope() && (g.rope_factors_long.size() * 2 != g.rotated_dims() ||
                             g.rope_factors_short.size() != g.rope_factors_long.size()))
        refuse("LongRoPE needs one long and one short factor per rotated pair");
    const bool moe_architecture = g.architecture == "qwen3moe" || g.architecture == "gpt-oss";
    if (g.is_moe() != moe_architecture)
        refuse("experts are written for qwen3moe and gpt-oss only, and those need them");
    if (g.is_moe() && (g.n_experts_used == 0 || g.n_experts_used > g.n_experts || g.expert_ffn_dim == 0))
        refuse("a mixture of experts needs 1 <= experts used <= experts and an expert FFN width");
    if (g.architecture == "gpt-oss" && g.tied_embeddings)
        refuse("llama.cpp's gpt-oss needs an output matrix of its own");
    if (g.has_yarn() && g.rope_original_context == 0)
        refuse("YaRN scaling needs the original context");
}

void write_vocabulary(GgufWriter& w, std::uint32_t vocab) {
    std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
    std::vector<std::int32_t> types{2, 3, 3}; // unknown, control, control
    for (int b = 0; b < 256 && tokens.size() < vocab; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.emplace_back(name);
        types.push_back(6); // byte
    }
    while (tokens.size() < vocab) {
        tokens.push_back("\xE2\x96\x81t" + std::to_string(tokens.size()));
        types.push_back(1); // normal
    }
    std::vector<float> scores(vocab);
    for (std::uint32_t i = 0; i < vocab; ++i)
        scores[i] = -static_cast<float>(i);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.unknown_token_id", 0);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
}

// RoPE keys as convert_hf_to_gguf.py writes them for each family.
void write_rope(GgufWriter& w, const std::string& a, const ModelGeometry& g) {
    w.set_f32(a + ".rope.freq_base", static_cast<float>(g.rope_theta));
    w.set_u32(a + ".rope.dimension_count", g.rotated_dims());
    if (g.rope_theta_swa != 0.0)
        w.set_f32(a + ".rope.freq_base_swa", static_cast<float>(g.rope_theta_swa));
    if (g.rope_linear_factor != 1.0) {
        w.set_string(a + ".rope.scaling.type", "linear");
        w.set_f32(a + ".rope.scaling.factor", static_cast<float>(g.rope_linear_factor));
    }
    if (g.has_yarn()) {
        w.set_string(a + ".rope.scaling.type", "yarn");
        w.set_f32(a + ".rope.scaling.factor", static_cast<float>(g.rope_yarn_factor));
    }
    if (g.rope_original_context != 0)
        w.set_u32(a + ".rope.scaling.original_context_length", g.rope_original_context);
    if (g.has_yarn()) {
        w.set_f32(a + ".rope.scaling.yarn_beta_fast", kYarnBetaFast);
        w.set_f32(a + ".rope.scaling.yarn_beta_slow", kYarnBetaSlow);
    }
    if (g.has_longrope()) {
        // Phi3MiniModel's attention factor for LongRoPE ("su"/"longrope").
        const double scale = double(g.context) / g.rope_original_context;
        const double factor = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(double(g.rope_original_context)))
                                          : 1.0;
        w.set_f32(a + ".rope.scaling.attn_factor", static_cast<float>(factor));
    }
}

void write_config(GgufWriter& w, const ModelGeometry& g) {
    const std::string a = g.architecture;
    w.set_string("general.architecture", a);
    w.set_string("general.name", "synthetic " + g.name + " (random weights)");
    w.set_u32(a + ".block_count", g.n_layers);
    w.set_u32(a + ".context_length", g.context);
    w.set_u32(a + ".embedding_length", g.dim);
    w.set_u32(a + ".feed_forward_length", g.ffn_dim);
    if (g.is_moe()) {
        w.set_u32(a + ".expert_count", g.n_experts);
        w.set_u32(a + ".expert_used_count", g.n_experts_used);
    }
    w.set_u32(a + ".attention.head_count", g.n_heads);
    w.set_u32(a + ".attention.head_count_kv", g.n_kv_heads);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(g.norm_eps));
    if (g.explicit_head_dim != 0) {
        w.set_u32(a + ".attention.key_length", g.explicit_head_dim);
        w.set_u32(a + ".attention.value_length", g.explicit_head_dim);
    }
    write_rope(w, a, g);
    if (g.sliding_window != 0) {
        w.set_u32(a + ".attention.sliding_window", g.sliding_window);
        if (g.swa_period != default_swa_period(a))
            w.set_u32(a + ".attention.sliding_window_pattern", g.swa_period);
    }
    if (g.attn_softcap != 0.0)
        w.set_f32(a + ".attn_logit_softcapping", static_cast<float>(g.attn_softcap));
    if (g.final_softcap != 0.0)
        w.set_f32(a + ".final_logit_softcapping", static_cast<float>(g.final_softcap));
    if (g.is_moe())
        w.set_u32(a + ".expert_feed_forward_length", g.expert_ffn_dim);
}

// Each tensor draws from its own generator, seeded from the model seed and
// the tensor's index, so the file does not depend on write order.
GgufWriter::Fill random_matrix(std::uint64_t rows, std::uint64_t cols, GgmlType type, float std,
                               std::uint64_t seed) {
    return [=](std::byte* dst) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(0.0f, std);
        std::vector<float> row(cols);
        const std::uint64_t row_size = row_bytes(type, cols);
        for (std::uint64_t r = 0; r < rows; ++r) {
            for (float& v : row)
                v = normal(rng);
            quantize_row(type, row.data(), dst + r * row_size, cols);
        }
    };
}

GgufWriter::Fill f32_vector(std::vector<float> values) {
    return [values = std::move(values)](std::byte* dst) {
        quantize_row(GgmlType::F32, values.data(), dst, values.size());
    };
}

// n draws of `distribution` from a generator seeded with `seed`.
template <typename Distribution>
std::vector<float> draws(std::uint64_t n, Distribution distribution, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> v(n);
    for (float& x : v)
        x = distribution(rng);
    return v;
}

std::vector<float> random_norm_weights(std::uint64_t n, float scale, std::uint64_t seed) {
    return draws(n, std::uniform_real_distribution<float>(0.5f * scale, 1.5f * scale), seed);
}

std::vector<float> random_normal(std::uint64_t n, float std, std::uint64_t seed) {
    return draws(n, std::normal_distribution<float>(0.0f, std), seed);
}

std::vector<float> random_uniform(std::uint64_t n, float max, std::uint64_t seed) {
    return draws(n, std::uniform_real_distribution<float>(0.0f, max), seed);
}

// Adds the tensors in order, each with its own seed (see random_matrix).
class TensorWriter {
public:
    TensorWriter(GgufWriter& w, WeightTypes types, std::uint64_t seed) : w_(w), types_(types), seed_(seed) {}

    // rows x cols, normal with std `std`, stored in the model's type (or
    // `type` where given: the router's F32).
    void matrix(const std::string& name, std::uint64_t rows, std::uint64_t cols, float std = kWeightStd) {
        matrix_in(types_.matrices, name, rows, cols, std);
    }
    void matrix_in(GgmlType type, const std::string& name, std::uint64_t rows, std::uint64_t cols, float std) {
        w_.add_tensor(name, {cols, rows}, type, random_matrix(rows, cols, type, std, next_seed()));
    }
    // `experts` matrices of rows x cols, one after the other (ggml dims
    // {cols, rows, experts}), stored in the experts' type.
    void experts(const std::string& name, std::uint64_t experts, std::uint64_t rows, std::uint64_t cols,
                 float std = kWeightStd) {
        const GgmlType type = types_.experts;
        w_.add_tensor(name, {cols, rows, experts}, type, random_matrix(experts * rows, cols, type, std, next_seed()));
    }
    // A bias of `n` values, normal with std kBiasStd; `experts` of them
    // (ggml dims {n, experts}) for the experts'.
    void bias(const std::string& name, std::uint64_t n, std::uint64_t experts = 1) {
        std::vector<float> values = random_normal(n * experts, kBiasStd, next_seed());
        if (experts == 1)
            vector(name, std::move(values));
        else
            w_.add_tensor(name, {n, experts}, GgmlType::F32, f32_vector(std::move(values)));
    }
    void sinks(const std::string& name, std::uint64_t n) { vector(name, random_uniform(n, kSinkMax, next_seed())); }
    // An RMSNorm's weights: uniform in [0.5, 1.5] times `scale`, so a runner
    // that skips a norm's weights, or adds Gemma's +1 again (its GGUFs hold
    // 1 + w already), computes something else.
    void norm(const std::string& name, std::uint64_t n, float scale = 1.0f) {
        vector(name, random_norm_weights(n, scale, next_seed()));
    }
    void vector(const std::string& name, std::vector<float> values) {
        const std::uint64_t n = values.size();
        w_.add_tensor(name, {n}, GgmlType::F32, f32_vector(std::move(values)));
    }

private:
    std::uint64_t next_seed() { return seed_ * 1000003 + index_++; }

    GgufWriter& w_;
    WeightTypes types_;
    std::uint64_t seed_;
    std::uint64_t index_ = 0;
};

// Gemma's post-norms scale each layer's output to about sqrt(dim)/2 per
// element, so the layers outweigh the token's own embedding in the residual
// stream. Gemma multiplies the embedding by sqrt(dim) and ties it to the
// output: with unit post-norms the std-0.02 embedding would dominate and
// the model would predict its input token at every position (gemma2-2b cut
// to 2 layers did, at all of 576), which no comparison can learn from.
float post_norm_scale(const ModelGeometry& g) { return 0.5f * std::sqrt(static_cast<float>(g.dim)); }

// The norms before values that are compared or capped. output_norm spreads
// the final logits (about 0.02 * sqrt(dim) * w at weight w) to a standard
// deviation of 3, so a few
// tokens hold much of each position's probability and a KL divergence over
// the top few measures something; where the model soft-caps them (Gemma 2,
// cap 30), to a third of the cap, so cap * tanh(x / cap) bends them. Gemma
// 2's attn_norm likewise brings its attention logits, about
// (0.02^2 * dim) * w^2, to a third of their cap.
float output_norm_scale(const ModelGeometry& g) {
    const double spread = g.final_softcap != 0.0 ? g.final_softcap / 3.0 : 3.0;
    return static_cast<float>(spread / (kWeightStd * std::sqrt(double(g.dim))));
}
float attn_norm_scale(const ModelGeometry& g) {
    const float weight_energy = kWeightStd * kWeightStd * static_cast<float>(g.dim);
    return g.attn_softcap == 0.0 ? 1.0f : static_cast<float>(std::sqrt(g.attn_softcap / 3.0 / weight_energy));
}

void write_attention(TensorWriter& t, const ModelGeometry& g, std::uint32_t l) {
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    const std::uint64_t dim = g.dim, q = g.q_dim(), kv = g.kv_dim();
    t.norm(name("attn_norm.weight"), dim, attn_norm_scale(g));
    if (g.has_fused_matrices()) {
        t.matrix(name("attn_qkv.weight"), q + 2 * kv, dim);
    } else {
        t.matrix(name("attn_q.weight"), q, dim);
        t.matrix(name("attn_k.weight"), kv, dim);
        t.matrix(name("attn_v.weight"), kv, dim);
    }
    t.matrix(name("attn_output.weight"), dim, q);
    if (g.has_biases()) { // small random biases (kBiasStd), O's too
        t.bias(name("attn_q.bias"), q);
        t.bias(name("attn_k.bias"), kv);
        t.bias(name("attn_v.bias"), kv);
        t.bias(name("attn_output.bias"), dim);
    } else if (g.qkv_bias) { // Qwen2's, zero
        t.vector(name("attn_q.bias"), std::vector<float>(q, 0.0f));
        t.vector(name("attn_k.bias"), std::vector<float>(kv, 0.0f));
        t.vector(name("attn_v.bias"), std::vector<float>(kv, 0.0f));
    }
    if (g.has_attention_sinks())
        t.sinks(name("attn_sinks.weight"), g.n_heads);
    if (g.has_qk_norm()) {
        t.norm(name("attn_q_norm.weight"), g.head_dim());
        t.norm(name("attn_k_norm.weight"), g.head_dim());
    }
    if (g.has_post_norms())
        t.norm(name("post_attention_norm.weight"), dim, post_norm_scale(g));
}

// The router's weights, so its logits spread as kRouterLogitStd says: its
// input is RMS-normed (about 1 per element) times norm weights of mean 1.
float router_std(const ModelGeometry& g) { return static_cast<float>(kRouterLogitStd / std::sqrt(double(g.dim))); }

// The experts' gate and up weights: as the dense FFN's, but gpt-oss's
// spread so their outputs reach its clamp (kClampedExpertOutputStd).
float expert_input_std(const ModelGeometry& g) {
    return g.architecture == "gpt-oss" ? static_cast<float>(kClampedExpertOutputStd / std::sqrt(double(g.dim)))
                                       : kWeightStd;
}

// A mixture-of-experts FFN as convert_hf_to_gguf.py writes it: the router
// (ffn_gate_inp, always F32), then each of gate, up and down as one 3-D
// tensor of every expert's matrix (gate/up {dim, ffn, experts}, down {ffn,
// dim, experts}); gpt-oss's biases beside them ({ffn or dim, experts}).
// gpt-oss names its FFN's input norm post_attention_norm (its checkpoint's
// post_attention_layernorm); llama.cpp reads it as that.
void write_moe_ffn(TensorWriter& t, const ModelGeometry& g, std::uint32_t l) {
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    const std::uint64_t dim = g.dim, ffn = g.expert_ffn_dim, experts = g.n_experts;
    t.norm(name(g.architecture == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight"), dim);
    t.matrix_in(GgmlType::F32, name("ffn_gate_inp.weight"), experts, dim, router_std(g));
    t.experts(name("ffn_gate_exps.weight"), experts, ffn, dim, expert_input_std(g));
    t.experts(name("ffn_up_exps.weight"), experts, ffn, dim, expert_input_std(g));
    t.experts(name("ffn_down_exps.weight"), experts, dim, ffn);
    if (g.has_biases()) {
        t.bias(name("ffn_gate_inp.bias"), experts);
        t.bias(name("ffn_gate_exps.bias"), ffn, experts);
        t.bias(name("ffn_up_exps.bias"), ffn, experts);
        t.bias(name("ffn_down_exps.bias"), dim, experts);
    }
}

void write_ffn(TensorWriter& t, const ModelGeometry& g, std::uint32_t l) {
    if (g.is_moe())
        return write_moe_ffn(t, g, l);
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    const std::uint64_t dim = g.dim, ffn = g.ffn_dim;
    t.norm(name("ffn_norm.weight"), dim);
    if (g.has_fused_matrices()) {
        t.matrix(name("ffn_up.weight"), 2 * ffn, dim); // gate rows, then up rows
    } else {
        t.matrix(name("ffn_gate.weight"), ffn, dim);
        t.matrix(name("ffn_up.weight"), ffn, dim);
    }
    t.matrix(name("ffn_down.weight"), dim, ffn);
    if (g.has_post_norms())
        t.norm(name("post_ffw_norm.weight"), dim, post_norm_scale(g));
}

} // namespace

void write_synthetic_model(const ModelGeometry& g, WeightTypes types, std::uint64_t seed, const std::string& path,
                           const std::string& chat_template) {
    check_writable(g);
    GgufWriter w;
    write_config(w, g);
    write_vocabulary(w, g.vocab);
    if (!chat_template.empty())
        w.set_string("tokenizer.chat_template", chat_template);
    TensorWriter t(w, types, seed);
    t.matrix("token_embd.weight", g.vocab, g.dim);
    for (std::uint32_t l = 0; l < g.n_layers; ++l) {
        write_attention(t, g, l);
        write_ffn(t, g, l);
    }
    t.norm("output_norm.weight", g.dim, output_norm_scale(g));
    if (!g.tied_embeddings)
        t.matrix("output.weight", g.vocab, g.dim);
    if (g.has_longrope()) {
        t.vector("rope_factors_long.weight", {g.rope_factors_long.begin(), g.rope_factors_long.end()});
        t.vector("rope_factors_short.weight", {g.rope_factors_short.begin(), g.rope_factors_short.end()});
    }
    w.write(path);
}

} // namespace kvscope

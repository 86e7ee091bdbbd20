#include "engine/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/model/config_reader.h"
#include "engine/model/message_format.h"
#include "engine/model/model_families.h"

namespace kvscope {
namespace {

using detail::ConfigReader;

// expert_count > 0 makes the FFN a mixture of experts; the family says how
// its router gates (model_families.cpp).
void read_experts(const ConfigReader& r, ModelConfig& c) {
    const std::uint64_t count = r.uint("expert_count").value_or(0);
    if (count == 0)
        return;
    Experts& e = c.experts;
    e.count = r.in_range(r.described("expert_count"), count);
    e.used = r.dimension("expert_used_count");
    e.ffn_dim = r.dimension("expert_feed_forward_length");
    if (e.used > e.count)
        r.fail(r.described("expert_used_count") + " is " + grouped(e.used) + ", more than the " +
               grouped(e.count) + " experts");
}

void read_dimensions(const ConfigReader& r, ModelConfig& c) {
    c.n_layers = r.dimension("block_count");
    c.embedding_dim = r.dimension("embedding_length");
    c.context_length = r.dimension("context_length");
    c.n_heads = r.dimension("attention.head_count");
    c.n_kv_heads = r.optional_dimension("attention.head_count_kv").value_or(c.n_heads);
    read_experts(r, c);
    // A MoE model's dense FFN width is unused (qwen3moe keeps its config's).
    c.ffn_dim = c.is_moe() ? r.optional_dimension("feed_forward_length").value_or(c.experts.ffn_dim)
                           : r.dimension("feed_forward_length");
    if (c.n_heads % c.n_kv_heads != 0)
        r.fail(std::to_string(c.n_heads) + " attention heads cannot be shared evenly by " +
               std::to_string(c.n_kv_heads) + " KV heads");
}

// head_dim is key_length when given, else embedding / heads, else (when
// that does not divide) rope.dimension_count. RoPE rotates the first
// rope.dimension_count dimensions of each head (all of them by default).
// V heads of another size than K heads are rejected, not half-supported.
void read_head_dim(const ConfigReader& r, ModelConfig& c) {
    const auto key_length = r.optional_dimension("attention.key_length");
    const auto rope_dims = r.optional_dimension("rope.dimension_count");
    const bool divides = c.embedding_dim % c.n_heads == 0;
    if (!key_length && !divides && !rope_dims)
        r.fail("embedding length " + grouped(c.embedding_dim) + " is not a multiple of " +
               grouped(c.n_heads) + " heads, and no attention.key_length gives the head size");
    c.head_dim = key_length ? *key_length
                 : divides  ? c.embedding_dim / c.n_heads
                            : *rope_dims;
    c.rope_dims = rope_dims.value_or(c.head_dim);
    if (c.rope_dims > c.head_dim || c.rope_dims % 2 != 0)
        r.fail("rope.dimension_count " + grouped(c.rope_dims) + " must be even and at most the head size " +
               grouped(c.head_dim));
    if (c.architecture == "llama" && c.rope_dims != c.head_dim)
        r.fail("rope.dimension_count " + grouped(c.rope_dims) + " differs from the head size " +
               grouped(c.head_dim) + ", which a llama model cannot have");
    const auto value_length = r.optional_dimension("attention.value_length");
    if (value_length && *value_length != c.head_dim)
        r.fail("attention.value_length " + grouped(*value_length) + " differs from key length " +
               grouped(c.head_dim) + ", which is not supported");
    if (c.head_dim % 2 != 0)
        r.fail("head size " + grouped(c.head_dim) + " is odd; RoPE needs pairs of dimensions");
    if (std::uint64_t{c.n_heads} * c.head_dim > std::numeric_limits<std::int32_t>::max())
        r.fail(grouped(c.n_heads) + " heads of size " + grouped(c.head_dim) + " are too large");
}

void read_rope(const ConfigReader& r, ModelConfig& c) {
    c.rope_theta = r.positive("rope.freq_base", 10000.0);
    // Newer files say rope.scaling.{type,factor}; older ones rope.scale_linear.
    const auto type = r.string("rope.scaling.type");
    if (type == "none")
        return;
    const double factor = r.has("rope.scaling.factor")
                              ? r.positive("rope.scaling.factor", std::nullopt)
                              : r.positive("rope.scale_linear", 1.0);
    if (!type && factor == 1.0)
        return;
    c.rope_scaling = RopeScaling{type.value_or("linear"), factor,
                                 r.uint("rope.scaling.original_context_length").value_or(0)};
    if (c.rope_scaling->type == "yarn") {
        RopeScaling& s = *c.rope_scaling;
        s.yarn_beta_fast = r.positive("rope.scaling.yarn_beta_fast", s.yarn_beta_fast);
        s.yarn_beta_slow = r.positive("rope.scaling.yarn_beta_slow", s.yarn_beta_slow);
        if (r.has("rope.scaling.yarn_log_multiplier"))
            s.yarn_log_mul = r.positive("rope.scaling.yarn_log_multiplier", std::nullopt);
    }
}

// Vocabulary size: the explicit key, else the tokenizer's token count, else
// the embedding's row count; the embedding shape check then confirms it.
// Every tokenizer id must have an embedding row.
std::uint32_t read_vocab_size(const ConfigReader& r) {
    const auto tokens = r.file().get_array_length("tokenizer.ggml.tokens");
    std::uint32_t vocab = 0;
    if (const auto explicit_size = r.optional_dimension("vocab_size")) {
        vocab = *explicit_size;
    } else if (tokens) {
        vocab = r.in_range("the length of tokenizer.ggml.tokens", *tokens);
    } else {
        const GgufTensorInfo* embd = r.file().find_tensor("token_embd.weight");
        if (embd == nullptr || embd->dims.size() != 2)
            r.fail("cannot tell the vocabulary size: no vocab_size, tokenizer.ggml.tokens or "
                   "2-D token_embd.weight");
        vocab = r.in_range("the row count of token_embd.weight", embd->dims[1]);
    }
    if (tokens && *tokens > vocab)
        r.fail("the tokenizer has " + grouped(*tokens) + " tokens but the model's vocabulary is " +
               grouped(vocab));
    return vocab;
}

// A MoE layer's router and experts: ffn_gate_inp {embd, experts}, the
// experts' gate and up {embd, ffn, experts} and down {ffn, embd, experts},
// with biases {experts}, {ffn, experts} and {embd, experts} where the
// family has them.
void check_expert_tensors(const ConfigReader& r, const ModelConfig& c, std::uint32_t layer) {
    const std::uint64_t embd = c.embedding_dim, ffn = c.experts.ffn_dim, n = c.experts.count;
    const auto name = [layer](const char* suffix) { return block_tensor_name(layer, suffix); };
    r.tensor(name("ffn_gate_inp.weight"), {embd, n});
    r.tensor(name("ffn_gate_exps.weight"), {embd, ffn, n});
    r.tensor(name("ffn_up_exps.weight"), {embd, ffn, n});
    r.tensor(name("ffn_down_exps.weight"), {ffn, embd, n});
    if (!c.experts.biases)
        return;
    r.tensor(name("ffn_gate_inp.bias"), {n});
    r.tensor(name("ffn_gate_exps.bias"), {ffn, n});
    r.tensor(name("ffn_up_exps.bias"), {ffn, n});
    r.tensor(name("ffn_down_exps.bias"), {embd, n});
}

// The tensors of one layer, as the config's features say it has them.
void check_layer_tensors(const ConfigReader& r, const ModelConfig& c, std::uint32_t layer) {
    const std::uint64_t embd = c.embedding_dim, hd = c.head_dim;
    const auto name = [layer](const char* suffix) { return block_tensor_name(layer, suffix); };
    r.tensor(name("attn_norm.weight"), {embd});
    if (c.fused_qkv) {
        r.tensor(name("attn_qkv.weight"), {embd, std::uint64_t{c.q_dim()} + 2 * c.kv_dim()});
    } else {
        r.tensor(name("attn_q.weight"), {embd, c.q_dim()});
        r.tensor(name("attn_k.weight"), {embd, c.kv_dim()});
        r.tensor(name("attn_v.weight"), {embd, c.kv_dim()});
    }
    if (c.qkv_bias) {
        r.tensor(name("attn_q.bias"), {c.q_dim()});
        r.tensor(name("attn_k.bias"), {c.kv_dim()});
        r.tensor(name("attn_v.bias"), {c.kv_dim()});
    }
    if (c.qk_norm) {
        r.tensor(name("attn_q_norm.weight"), {hd});
        r.tensor(name("attn_k_norm.weight"), {hd});
    }
    r.tensor(name("attn_output.weight"), {c.q_dim(), embd});
    if (c.output_bias)
        r.tensor(name("attn_output.bias"), {embd});
    if (c.attn_sinks)
        r.tensor(name("attn_sinks.weight"), {c.n_heads});
    r.tensor(block_tensor_name(layer, c.ffn_norm_tensor()), {embd});
    if (c.is_moe()) {
        check_expert_tensors(r, c, layer);
    } else if (c.fused_gate_up) {
        r.tensor(name("ffn_up.weight"), {embd, 2 * std::uint64_t{c.ffn_dim}});
    } else {
        r.tensor(name("ffn_gate.weight"), {embd, c.ffn_dim});
        r.tensor(name("ffn_up.weight"), {embd, c.ffn_dim});
    }
    if (!c.is_moe())
        r.tensor(name("ffn_down.weight"), {c.ffn_dim, embd});
    if (c.post_norms) {
        r.tensor(name("post_attention_norm.weight"), {embd});
        r.tensor(name("post_ffw_norm.weight"), {embd});
    }
}

// RoPE frequency factors: Llama 3.1's rope_freqs, or Phi-3's pair of
// LongRoPE factor tensors (both or neither).
void check_rope_factors(const ConfigReader& r, ModelConfig& c) {
    const std::uint64_t pairs = c.rope_dims / 2;
    const bool freqs = r.tensor("rope_freqs.weight", {pairs}, false) != nullptr;
    const bool long_factors = r.tensor("rope_factors_long.weight", {pairs}, false) != nullptr;
    const bool short_factors = r.tensor("rope_factors_short.weight", {pairs}, false) != nullptr;
    if (long_factors != short_factors)
        r.fail("tensor " + quoted(long_factors ? "rope_factors_short.weight" : "rope_factors_long.weight") +
               " is missing; LongRoPE needs both factor tensors");
    if (freqs && long_factors)
        r.fail("the file has both rope_freqs and LongRoPE factor tensors");
    c.rope_freq_factors = freqs || long_factors;
    const auto original = r.uint("rope.scaling.original_context_length").value_or(c.context_length);
    c.long_rope = long_factors && c.context_length > original;
}

void check_tensors(const ConfigReader& r, ModelConfig& c) {
    const std::uint64_t embd = c.embedding_dim;
    r.tensor("token_embd.weight", {embd, c.vocab_size});
    r.tensor("output_norm.weight", {embd});
    if (!c.tied_embeddings)
        c.tied_embeddings = r.tensor("output.weight", {embd, c.vocab_size}, false) == nullptr;
    check_rope_factors(r, c);
    for (std::uint32_t layer = 0; layer < c.n_layers; ++layer)
        check_layer_tensors(r, c, layer);
}

} // namespace

std::string_view to_string(RopeStyle style) {
    return style == RopeStyle::NeoXHalves ? "neox halves" : "adjacent pairs";
}

std::string block_tensor_name(std::uint32_t layer, std::string_view suffix) {
    return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

bool ModelConfig::has_windows() const {
    for (const LayerAttention& l : layers)
        if (l.window > 0)
            return true;
    return false;
}

std::vector<std::uint32_t> ModelConfig::layer_windows() const {
    std::vector<std::uint32_t> windows(n_layers, 0);
    for (std::size_t l = 0; l < layers.size() && l < n_layers; ++l)
        windows[l] = layers[l].window;
    return windows;
}

std::string ModelConfig::layer_kinds() const {
    std::uint32_t windowed = 0, no_rope = 0;
    std::uint32_t window = 0;
    for (const LayerAttention& l : layers) {
        windowed += l.window > 0;
        no_rope += !l.rope;
        window = std::max(window, l.window);
    }
    std::string text = std::to_string(n_layers) + " layers";
    if (windowed == 0)
        text += ", all global";
    else
        text += ": " + std::to_string(windowed) + " sliding-window (" + std::to_string(window) + "), " +
                std::to_string(n_layers - windowed) + " global";
    if (no_rope > 0)
        text += "; " + std::to_string(no_rope) + " without RoPE";
    return text;
}

std::string ModelConfig::features() const {
    std::vector<std::string> parts;
    if (is_moe())
        parts.push_back(std::to_string(experts.count) + " experts (" + std::to_string(experts.used) +
                        " per token)");
    if (qkv_bias)
        parts.push_back(output_bias ? "QKV and output bias" : "QKV bias");
    if (attn_sinks)
        parts.push_back("attention sinks");
    if (fused_qkv || fused_gate_up)
        parts.push_back("fused matrices");
    if (qk_norm)
        parts.push_back("QK-norm");
    if (post_norms)
        parts.push_back("post-norms");
    if (ffn_activation != FfnActivation::SiLU)
        parts.push_back(std::string(to_string(ffn_activation)) + " FFN");
    if (rope_dims != head_dim)
        parts.push_back("RoPE on " + std::to_string(rope_dims) + " of " + std::to_string(head_dim) + " dims");
    if (rope_scaling && rope_scaling->type == "yarn")
        parts.push_back("YaRN RoPE x" + decimal(rope_scaling->factor));
    if (long_rope || rope_freq_factors)
        parts.push_back(long_rope ? "LongRoPE (long factors)" : "RoPE frequency factors");
    if (attn_softcap > 0)
        parts.push_back("attention soft-cap " + decimal(attn_softcap));
    if (final_softcap > 0)
        parts.push_back("logit soft-cap " + decimal(final_softcap));
    if (embedding_scale != 1.0)
        parts.push_back("scaled embeddings");
    if (parts.empty())
        return "none";
    std::string text;
    for (const std::string& p : parts)
        text += (text.empty() ? "" : ", ") + p;
    return text;
}

std::string_view to_string(FfnActivation activation) {
    switch (activation) {
    case FfnActivation::GeluTanh:
        return "gelu (tanh)";
    case FfnActivation::SwiGluClamped:
        return "clamped swiglu";
    case FfnActivation::SiLU:
        break;
    }
    return "silu";
}

std::string_view ModelConfig::ffn_norm_tensor() const {
    return architecture == "gpt-oss" ? "post_attention_norm.weight" : "ffn_norm.weight";
}

ModelConfig read_model_config(const GgufFile& file) {
    const auto arch = file.get_string("general.architecture");
    if (!arch)
        throw Error(file.path() + ": missing metadata general.architecture; is this a model file?");
    if (!is_supported_architecture(*arch))
        throw Error(file.path() + ": unsupported architecture " + quoted(*arch) +
                    " (supported: " + supported_architecture_list() + ")");
    const ConfigReader r(file, *arch);
    ModelConfig c;
    c.architecture = *arch;
    c.name = file.get_string("general.name").value_or("");
    read_dimensions(r, c);
    read_head_dim(r, c);
    read_rope(r, c);
    c.norm_eps = r.positive("attention.layer_norm_rms_epsilon", std::nullopt);
    c.vocab_size = read_vocab_size(r);
    detail::read_family(r, c);
    check_tensors(r, c);
    logger("model")->info(
        "{}: {} '{}': {} layers, dim {}, {} heads ({} KV) x {}, ffn {}, vocab {}, ctx {}{}{}; {}",
        file.path(), c.architecture, c.name, c.n_layers, c.embedding_dim, c.n_heads,
        c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size, c.context_length,
        c.tied_embeddings ? ", tied embeddings" : "", c.qkv_bias ? ", QKV bias" : "", c.layer_kinds());
    return c;
}

} // namespace kvscope

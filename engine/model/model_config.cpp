#include "engine/model/model_config.h"

#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/model/message_format.h"

namespace kvscope {
namespace {

std::string shape_text(const std::vector<std::uint64_t>& dims) {
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i)
        text += (i ? ", " : "") + grouped(dims[i]);
    return text + "]";
}

// Reads metadata under the architecture's prefix ("llama.block_count") and
// checks tensors, with errors that name the file.
class ConfigReader {
public:
    explicit ConfigReader(const GgufFile& file) : file_(file) {}

    [[noreturn]] void fail(const std::string& problem) const {
        throw Error(file_.path() + ": " + problem);
    }

    std::string architecture() {
        const auto arch = file_.get_string("general.architecture");
        if (!arch)
            fail("missing metadata general.architecture; is this a model file?");
        if (*arch != "llama" && *arch != "qwen2")
            fail("unsupported architecture " + quoted(*arch) + " (supported: llama, qwen2)");
        arch_ = *arch;
        prefix_ = *arch + ".";
        return *arch;
    }

    bool has(std::string_view key) const { return file_.has(prefix_ + std::string(key)); }

    std::optional<std::uint64_t> uint(std::string_view key) const {
        return file_.get_uint(prefix_ + std::string(key));
    }

    // A size or count: present, positive and small enough for 32 bits.
    std::uint32_t dimension(std::string_view key) const {
        const auto value = uint(key);
        if (!value)
            fail("missing " + described(key));
        return in_range(described(key), *value);
    }

    std::string described(std::string_view key) const {
        return "metadata " + quoted(prefix_ + std::string(key));
    }

    std::uint32_t in_range(const std::string& what, std::uint64_t value) const {
        if (value == 0 || value > std::numeric_limits<std::int32_t>::max())
            fail(what + " is " + grouped(value) + ", expected 1 to " +
                 grouped(std::numeric_limits<std::int32_t>::max()));
        return static_cast<std::uint32_t>(value);
    }

    std::optional<std::uint32_t> optional_dimension(std::string_view key) const {
        const auto value = uint(key);
        return value ? std::optional(in_range(described(key), *value)) : std::nullopt;
    }

    // A float that must be positive and finite, with an optional default.
    double positive(std::string_view key, std::optional<double> fallback) const {
        const std::string full = prefix_ + std::string(key);
        const auto value = file_.get_float(full);
        if (!value && !fallback)
            fail("missing metadata " + quoted(full));
        const double result = value.value_or(fallback.value_or(0.0));
        if (!(result > 0.0) || !std::isfinite(result))
            fail("metadata " + quoted(full) + " is " + decimal(result) +
                 ", expected a positive number");
        return result;
    }

    std::optional<std::string> string(std::string_view key) const {
        return file_.get_string(prefix_ + std::string(key));
    }

    // The tensor, checked for shape and type; nullptr when optional and
    // absent.
    const GgufTensorInfo* tensor(const std::string& name, const std::vector<std::uint64_t>& dims,
                                 bool required = true) const {
        const GgufTensorInfo* t = file_.find_tensor(name);
        if (t == nullptr) {
            if (required)
                fail("missing tensor " + quoted(name) + ", which a " + arch_ + " model needs");
            return nullptr;
        }
        if (t->dims != dims)
            fail("tensor " + quoted(name) + " has shape " + shape_text(t->dims) + ", expected " +
                 shape_text(dims) + " from the metadata");
        if (dims.size() == 1 && t->type != GgmlType::F32)
            fail("tensor " + quoted(name) + " has type " + std::string(to_string(t->type)) +
                 ", expected F32 for a 1-D tensor (norm or bias)");
        if (!is_dequantizable(t->type))
            fail("tensor " + quoted(name) + " has type " + std::string(to_string(t->type)) +
                 ", which kvscope cannot compute with (supported: " + dequantizable_type_names() + ")");
        return t;
    }

    const GgufFile& file() const { return file_; }

private:
    const GgufFile& file_;
    std::string arch_;
    std::string prefix_; // "llama."
};

void read_dimensions(const ConfigReader& r, ModelConfig& c) {
    c.n_layers = r.dimension("block_count");
    c.embedding_dim = r.dimension("embedding_length");
    c.ffn_dim = r.dimension("feed_forward_length");
    c.context_length = r.dimension("context_length");
    c.n_heads = r.dimension("attention.head_count");
    c.n_kv_heads = r.optional_dimension("attention.head_count_kv").value_or(c.n_heads);
    if (r.uint("expert_count").value_or(0) > 0)
        r.fail("mixture-of-experts models are not supported");
    if (c.n_heads % c.n_kv_heads != 0)
        r.fail(std::to_string(c.n_heads) + " attention heads cannot be shared evenly by " +
               std::to_string(c.n_kv_heads) + " KV heads");
}

// head_dim is key_length when given, else embedding / heads, else (when
// that does not divide) rope.dimension_count. Partial rotary embeddings and
// V heads of another size are not part of llama or qwen2, so they are
// rejected, not half-supported.
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
    if (rope_dims && *rope_dims != c.head_dim)
        r.fail("rope.dimension_count " + grouped(*rope_dims) + " differs from the head size " +
               grouped(c.head_dim) + "; partial rotary embeddings are not supported");
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
    c.rope_style = c.architecture == "qwen2" ? RopeStyle::NeoXHalves : RopeStyle::AdjacentPairs;
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

void check_tensors(const ConfigReader& r, ModelConfig& c) {
    const std::uint64_t embd = c.embedding_dim;
    r.tensor("token_embd.weight", {embd, c.vocab_size});
    r.tensor("output_norm.weight", {embd});
    c.tied_embeddings = r.tensor("output.weight", {embd, c.vocab_size}, false) == nullptr;
    c.rope_freq_factors = r.tensor("rope_freqs.weight", {c.head_dim / 2}, false) != nullptr;

    // qwen2 always has Q/K/V biases; llama files may carry all three.
    const auto has_bias = [&](const char* what) {
        return r.file().find_tensor(block_tensor_name(0, what)) != nullptr;
    };
    c.qkv_bias = c.architecture == "qwen2" || has_bias("attn_q.bias") ||
                 has_bias("attn_k.bias") || has_bias("attn_v.bias");

    for (std::uint32_t layer = 0; layer < c.n_layers; ++layer) {
        const auto name = [layer](const char* suffix) { return block_tensor_name(layer, suffix); };
        r.tensor(name("attn_norm.weight"), {embd});
        r.tensor(name("attn_q.weight"), {embd, c.q_dim()});
        r.tensor(name("attn_k.weight"), {embd, c.kv_dim()});
        r.tensor(name("attn_v.weight"), {embd, c.kv_dim()});
        r.tensor(name("attn_output.weight"), {c.q_dim(), embd});
        r.tensor(name("ffn_norm.weight"), {embd});
        r.tensor(name("ffn_gate.weight"), {embd, c.ffn_dim});
        r.tensor(name("ffn_up.weight"), {embd, c.ffn_dim});
        r.tensor(name("ffn_down.weight"), {c.ffn_dim, embd});
        if (c.qkv_bias) {
            r.tensor(name("attn_q.bias"), {c.q_dim()});
            r.tensor(name("attn_k.bias"), {c.kv_dim()});
            r.tensor(name("attn_v.bias"), {c.kv_dim()});
        }
    }
}

} // namespace

std::string_view to_string(RopeStyle style) {
    return style == RopeStyle::NeoXHalves ? "neox halves" : "adjacent pairs";
}

std::string block_tensor_name(std::uint32_t layer, std::string_view suffix) {
    return "blk." + std::to_string(layer) + "." + std::string(suffix);
}

ModelConfig read_model_config(const GgufFile& file) {
    ConfigReader r(file);
    ModelConfig c;
    c.architecture = r.architecture();
    c.name = file.get_string("general.name").value_or("");
    read_dimensions(r, c);
    read_head_dim(r, c);
    read_rope(r, c);
    c.norm_eps = r.positive("attention.layer_norm_rms_epsilon", std::nullopt);
    c.vocab_size = read_vocab_size(r);
    check_tensors(r, c);
    logger("model")->info(
        "{}: {} '{}': {} layers, dim {}, {} heads ({} KV) x {}, ffn {}, vocab {}, ctx {}{}{}",
        file.path(), c.architecture, c.name, c.n_layers, c.embedding_dim, c.n_heads,
        c.n_kv_heads, c.head_dim, c.ffn_dim, c.vocab_size, c.context_length,
        c.tied_embeddings ? ", tied embeddings" : "", c.qkv_bias ? ", QKV bias" : "");
    return c;
}

} // namespace kvscope

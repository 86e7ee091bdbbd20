#include "engine/runtime/model_weights.h"

#include <string>

#include "engine/core/error.h"

namespace kvscope {
namespace {

const GgufTensorInfo& tensor(const GgufFile& file, const std::string& name) {
    const GgufTensorInfo* t = file.find_tensor(name);
    if (!t)
        throw Error(file.path() + ": tensor " + name + " is missing");
    return *t;
}

// A 2-D tensor (`dims` 2), or a 3-D one of one matrix per expert (`dims`
// 3) seen as one matrix of all their rows.
WeightMatrix matrix(const GgufFile& file, const std::string& name, std::size_t dims = 2) {
    const GgufTensorInfo& t = tensor(file, name);
    const auto raw = static_cast<std::uint32_t>(t.type);
    if (!kernels::cpu::is_weight_type(raw) || t.dims.size() != dims)
        throw Error(file.path() + ": tensor " + name + " of type " + std::string(to_string(t.type)) + " and " +
                    std::to_string(t.dims.size()) + " dimensions cannot be used as " +
                    (dims == 2 ? "a weight matrix" : "one weight matrix per expert"));
    WeightMatrix m;
    m.type = static_cast<kernels::cpu::WeightType>(raw);
    m.data = t.data;
    m.cols = t.dims[0];
    m.rows = t.dims[1] * (dims == 3 ? t.dims[2] : 1);
    m.row_bytes = kernels::cpu::weight_row_bytes(m.type, m.cols);
    return m;
}

// 1-D norm weights and biases; read_model_config has checked they are F32.
const float* vector_f32(const GgufFile& file, const std::string& name) {
    const GgufTensorInfo& t = tensor(file, name);
    if (t.type != GgmlType::F32)
        throw Error(file.path() + ": tensor " + name + " must be F32");
    return reinterpret_cast<const float*>(t.data);
}

// Rows [first, first + count) of a matrix, as a matrix of their own: how
// fused tensors (Phi-3's attn_qkv, its gate/up ffn_up) become the Q, K, V,
// gate and up matrices the forward pass reads, without a copy.
WeightMatrix row_range(const WeightMatrix& m, std::size_t first, std::size_t count) {
    WeightMatrix part = m;
    part.data = static_cast<const std::byte*>(m.data) + first * m.row_bytes;
    part.rows = count;
    return part;
}

void bind_attention(const GgufFile& file, const ModelConfig& config, std::uint32_t l, LayerWeights& w) {
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    w.attn_norm = vector_f32(file, name("attn_norm.weight"));
    if (config.fused_qkv) {
        const WeightMatrix qkv = matrix(file, name("attn_qkv.weight"));
        w.q = row_range(qkv, 0, config.q_dim());
        w.k = row_range(qkv, config.q_dim(), config.kv_dim());
        w.v = row_range(qkv, config.q_dim() + config.kv_dim(), config.kv_dim());
    } else {
        w.q = matrix(file, name("attn_q.weight"));
        w.k = matrix(file, name("attn_k.weight"));
        w.v = matrix(file, name("attn_v.weight"));
    }
    if (config.qkv_bias) {
        w.q_bias = vector_f32(file, name("attn_q.bias"));
        w.k_bias = vector_f32(file, name("attn_k.bias"));
        w.v_bias = vector_f32(file, name("attn_v.bias"));
    }
    if (config.qk_norm) {
        w.q_norm = vector_f32(file, name("attn_q_norm.weight"));
        w.k_norm = vector_f32(file, name("attn_k_norm.weight"));
    }
    w.o = matrix(file, name("attn_output.weight"));
    if (config.output_bias)
        w.o_bias = vector_f32(file, name("attn_output.bias"));
    if (config.attn_sinks)
        w.sinks = vector_f32(file, name("attn_sinks.weight"));
    if (config.post_norms)
        w.attn_post_norm = vector_f32(file, name("post_attention_norm.weight"));
}

// A 3-D expert tensor {cols, rows, experts} seen as `experts` matrices of
// `rows` rows each.
std::vector<WeightMatrix> expert_matrices(const GgufFile& file, const std::string& name) {
    const WeightMatrix all = matrix(file, name, 3);
    const std::size_t experts = tensor(file, name).dims[2], rows = all.rows / experts;
    std::vector<WeightMatrix> each;
    for (std::size_t e = 0; e < experts; ++e)
        each.push_back(row_range(all, e * rows, rows));
    return each;
}

void bind_experts(const GgufFile& file, const ModelConfig& config, std::uint32_t l, ExpertWeights& x) {
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    x.router = matrix(file, name("ffn_gate_inp.weight"));
    x.gate = expert_matrices(file, name("ffn_gate_exps.weight"));
    x.up = expert_matrices(file, name("ffn_up_exps.weight"));
    x.down = expert_matrices(file, name("ffn_down_exps.weight"));
    if (!config.experts.biases)
        return;
    x.router_bias = vector_f32(file, name("ffn_gate_inp.bias"));
    x.gate_bias = vector_f32(file, name("ffn_gate_exps.bias"));
    x.up_bias = vector_f32(file, name("ffn_up_exps.bias"));
    x.down_bias = vector_f32(file, name("ffn_down_exps.bias"));
}

void bind_ffn(const GgufFile& file, const ModelConfig& config, std::uint32_t l, LayerWeights& w) {
    auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
    w.ffn_norm = vector_f32(file, block_tensor_name(l, config.ffn_norm_tensor()));
    if (config.is_moe()) {
        bind_experts(file, config, l, w.experts);
    } else if (config.fused_gate_up) {
        const WeightMatrix gate_up = matrix(file, name("ffn_up.weight"));
        w.gate = row_range(gate_up, 0, config.ffn_dim);
        w.up = row_range(gate_up, config.ffn_dim, config.ffn_dim);
    } else {
        w.gate = matrix(file, name("ffn_gate.weight"));
        w.up = matrix(file, name("ffn_up.weight"));
    }
    if (!config.is_moe())
        w.down = matrix(file, name("ffn_down.weight"));
    if (config.post_norms)
        w.ffn_post_norm = vector_f32(file, name("post_ffw_norm.weight"));
}

// The factors that divide RoPE's frequencies, or nullptr.
const float* rope_factors(const GgufFile& file, const ModelConfig& config) {
    if (!config.rope_freq_factors)
        return nullptr;
    if (file.find_tensor("rope_freqs.weight"))
        return vector_f32(file, "rope_freqs.weight");
    return vector_f32(file, config.long_rope ? "rope_factors_long.weight" : "rope_factors_short.weight");
}

} // namespace

ModelWeights::ModelWeights(const GgufFile& file, const ModelConfig& config)
    : token_embd(matrix(file, "token_embd.weight")),
      output(config.tied_embeddings ? token_embd : matrix(file, "output.weight")),
      output_norm(vector_f32(file, "output_norm.weight")), experts_used(config.experts.used) {
    rope_factors = kvscope::rope_factors(file, config);
    for (std::uint32_t l = 0; l < config.n_layers; ++l) {
        LayerWeights w;
        bind_attention(file, config, l, w);
        bind_ffn(file, config, l, w);
        layers.push_back(w);
    }
}

std::size_t ModelWeights::bytes_read_per_token() const {
    auto bytes = [](const WeightMatrix& m) { return m.packed != nullptr ? m.packed->bytes() : m.rows * m.row_bytes; };
    std::size_t total = bytes(output);
    for (const LayerWeights& w : layers) {
        total += bytes(w.q) + bytes(w.k) + bytes(w.v) + bytes(w.o) + bytes(w.gate) + bytes(w.up) + bytes(w.down);
        const ExpertWeights& x = w.experts;
        if (x.count() == 0)
            continue;
        // Every expert has the same size; a token reads `used` of them.
        const std::size_t expert = bytes(x.gate[0]) + bytes(x.up[0]) + bytes(x.down[0]);
        total += bytes(x.router) + expert * experts_used;
    }
    return total;
}

} // namespace kvscope

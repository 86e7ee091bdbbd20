#include "engine/model/synthetic_model.h"

#include <cstdio>
#include <random>
#include <vector>

#include "engine/model/gguf_writer.h"
#include "engine/model/model_config.h"
#include "engine/model/quantize.h"

namespace kvscope {
namespace {

constexpr float kWeightStd = 0.02f;

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

void write_config(GgufWriter& w, const ModelGeometry& g) {
    const std::string a = g.architecture;
    w.set_string("general.architecture", a);
    w.set_string("general.name", "synthetic " + g.name + " (random weights)");
    w.set_u32(a + ".block_count", g.n_layers);
    w.set_u32(a + ".context_length", g.context);
    w.set_u32(a + ".embedding_length", g.dim);
    w.set_u32(a + ".feed_forward_length", g.ffn_dim);
    w.set_u32(a + ".attention.head_count", g.n_heads);
    w.set_u32(a + ".attention.head_count_kv", g.n_kv_heads);
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    w.set_f32(a + ".rope.freq_base", a == "qwen2" ? 1000000.0f : 10000.0f);
    w.set_u32(a + ".rope.dimension_count", g.head_dim());
}

// Each tensor draws from its own generator, seeded from the model seed and
// the tensor's index, so the file does not depend on write order.
GgufWriter::Fill random_matrix(std::uint64_t rows, std::uint64_t cols, GgmlType type, std::uint64_t seed) {
    return [=](std::byte* dst) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(0.0f, kWeightStd);
        std::vector<float> row(cols);
        const std::uint64_t row_size = row_bytes(type, cols);
        for (std::uint64_t r = 0; r < rows; ++r) {
            for (float& v : row)
                v = normal(rng);
            quantize_row(type, row.data(), dst + r * row_size, cols);
        }
    };
}

GgufWriter::Fill constant_vector(std::uint64_t n, float value) {
    return [=](std::byte* dst) {
        const std::vector<float> v(n, value);
        quantize_row(GgmlType::F32, v.data(), dst, n);
    };
}

} // namespace

void write_synthetic_model(const ModelGeometry& g, GgmlType type, std::uint64_t seed, const std::string& path,
                           const std::string& chat_template) {
    GgufWriter w;
    write_config(w, g);
    write_vocabulary(w, g.vocab);
    if (!chat_template.empty())
        w.set_string("tokenizer.chat_template", chat_template);
    const std::uint64_t dim = g.dim, kv_dim = std::uint64_t{g.n_kv_heads} * g.head_dim(), ffn = g.ffn_dim;
    std::uint64_t index = 0;
    auto matrix = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols) {
        w.add_tensor(name, {cols, rows}, type, random_matrix(rows, cols, type, seed * 1000003 + index++));
    };
    auto vector = [&](const std::string& name, std::uint64_t n, float value) {
        w.add_tensor(name, {n}, GgmlType::F32, constant_vector(n, value));
    };
    matrix("token_embd.weight", g.vocab, dim);
    for (std::uint32_t l = 0; l < g.n_layers; ++l) {
        auto name = [l](const char* suffix) { return block_tensor_name(l, suffix); };
        vector(name("attn_norm.weight"), dim, 1.0f);
        matrix(name("attn_q.weight"), dim, dim);
        matrix(name("attn_k.weight"), kv_dim, dim);
        matrix(name("attn_v.weight"), kv_dim, dim);
        matrix(name("attn_output.weight"), dim, dim);
        if (g.qkv_bias) {
            vector(name("attn_q.bias"), dim, 0.0f);
            vector(name("attn_k.bias"), kv_dim, 0.0f);
            vector(name("attn_v.bias"), kv_dim, 0.0f);
        }
        vector(name("ffn_norm.weight"), dim, 1.0f);
        matrix(name("ffn_gate.weight"), ffn, dim);
        matrix(name("ffn_up.weight"), ffn, dim);
        matrix(name("ffn_down.weight"), dim, ffn);
    }
    vector("output_norm.weight", dim, 1.0f);
    if (!g.tied_embeddings)
        matrix("output.weight", g.vocab, dim);
    w.write(path);
}

} // namespace kvscope

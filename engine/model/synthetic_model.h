#pragma once

#include <cstdint>
#include <string>

#include "engine/model/ggml_type.h"
#include "engine/presets/model_presets.h"

namespace kvscope {

// How a synthetic model stores its matrices: each in `matrices`, but a
// mixture of experts' expert matrices (ffn_{gate,up,down}_exps) in
// `experts`, as gpt-oss's files hold them in MXFP4 beside Q8_0. Vectors
// (norms, biases, sinks) and the router (ffn_gate_inp) are F32 whatever
// these say, as convert_hf_to_gguf.py writes them.
struct WeightTypes {
    WeightTypes(GgmlType all) : matrices(all), experts(all) {} // NOLINT(google-explicit-constructor): one type for all
    WeightTypes(GgmlType matrices_type, GgmlType experts_type) : matrices(matrices_type), experts(experts_type) {}
    GgmlType matrices;
    GgmlType experts;
};

// Writes a GGUF model of a real model's shape with random weights and a
// placeholder SentencePiece vocabulary of the right size (<unk>, <s>, </s>,
// the 256 byte tokens, then "▁t<N>" pieces). It runs like the real model and
// costs the same memory and time, but its text is meaningless.
//
// The file is what llama.cpp's convert_hf_to_gguf.py writes for the
// geometry's architecture (llama, qwen2, qwen3, gemma3, gemma2, phi3,
// smollm3, qwen3moe, gpt-oss): the same metadata keys (key_length,
// sliding_window, freq_base_swa, soft-caps, LongRoPE's original context and
// attention factor, expert_count, expert_used_count,
// expert_feed_forward_length, rope.scaling.yarn_*, ...) and tensor names
// (attn_q_norm, post_attention_norm, post_ffw_norm, attn_qkv,
// rope_factors_long/short, ffn_gate_inp, ffn_{gate,up,down}_exps as 3-D
// tensors of every expert, attn_sinks, attn_output.bias, ...), so llama.cpp
// loads and runs it.
// sliding_window_pattern is written only where it differs from llama.cpp's
// default for the architecture (as for a cut model's own pattern).
//
// Weights, chosen so that llama.cpp's and another engine's logits can be
// compared meaningfully (synthetic_model.cpp says why each): matrices
// normal with std 0.02; RMSNorm weights uniform in [0.5, 1.5] (a runner
// that ignores a norm's weights, or adds Gemma's +1 again, disagrees),
// output_norm's scaled so the final logits spread with a standard deviation
// of about 3 (a third of the cap where the model soft-caps them), Gemma's
// post-norms by sqrt(dim)/2 (else its tied, sqrt(dim)-scaled embedding makes
// the model predict its input token), Gemma 2's attn_norm so its attention
// logits reach a third of their cap; Qwen2's QKV biases 0; LongRoPE factors
// the geometry's. Mixtures of experts: router weights spread so its logits
// have a standard deviation of about 2 (the top k seldom a near-tie),
// gpt-oss's expert gate/up so about 5% of their outputs pass its SwiGLU
// clamp, its biases normal with std 0.1 and its attention sinks uniform in
// [0, 8) (up to a head's largest scores). Matrices are stored in `types`
// (F32, F16, BF16, Q8_0, Q4_0, ...; MXFP4 experts), vectors in F32. A non-empty `chat_template` (Jinja text) is written as
// tokenizer.chat_template, so the model can be chatted with and served
// through a chat API.
//
// Throws kvscope::Error for a geometry the architecture's GGUF cannot express
// (llama.cpp derives some numbers from the architecture: smollm3's every 4th
// layer without RoPE, Gemma's query scale 1/sqrt(head_dim), phi3's query
// width, experts outside qwen3moe and gpt-oss) and when the file cannot be
// written.
void write_synthetic_model(const ModelGeometry& geometry, WeightTypes types, std::uint64_t seed,
                           const std::string& path, const std::string& chat_template = {});

} // namespace kvscope

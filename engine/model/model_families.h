// engine/model: the architectures kvscope runs, each read from its GGUF
// metadata as llama.cpp reads it (src/models/<family>.cpp there). Every
// family is the llama decoder with features switched on (ModelConfig's
// "beyond llama" fields and its per-layer LayerAttention):
//
//   llama    the baseline: RMSNorm, Q/K/V (+ optional biases), RoPE in
//            adjacent pairs, SwiGLU FFN (also Mistral, TinyLlama)
//   qwen2    Q/K/V biases, NeoX RoPE
//   qwen3    per-head RMSNorm of Q and K before RoPE, NeoX RoPE, head size
//            from attention.key_length (may differ from width / heads)
//   gemma2   embeddings × √width, a norm after each sublayer too, GeGLU
//            FFN, NeoX RoPE, soft-capped attention scores and logits,
//            sliding windows (default 4096) on alternate layers
//   gemma3   gemma2's sandwich norms and GeGLU with QK-norm, no attention
//            soft-cap, windows in a 5 local : 1 global pattern with their
//            own RoPE base (freq_base_swa, 10000) and no RoPE scaling
//   phi3     fused attn_qkv and fused gate/up FFN, NeoX RoPE, partial
//            rotary and LongRoPE factors (Phi-4-mini); the files' sliding
//            window is ignored, as llama.cpp ignores it
//   smollm3  llama with no RoPE on every fourth layer
//   qwen3moe qwen3's attention with a mixture-of-experts FFN: a router
//            softmax over every expert, the top k renormalised, SiLU experts
//   gpt-oss  biases on Q/K/V/O, router and experts, attention sinks,
//            128-token windows on alternate layers, YaRN RoPE (NeoX), top k
//            of the router's logits then a softmax over those k, the clamped
//            SwiGLU, untied output; its FFN norm is post_attention_norm
#pragma once

#include <string>
#include <string_view>

#include "engine/model/config_reader.h"
#include "engine/model/model_config.h"

namespace kvscope {

// True for the architecture names above.
bool is_supported_architecture(std::string_view name);
// "llama, qwen2, ...", for error messages.
std::string supported_architecture_list();

namespace detail {

// Sets what `c.architecture` adds to llama: its features, RoPE style and
// each layer's attention. Needs the common dimensions, head size and RoPE
// already read into `c`; reads the family's own keys through `r`. Throws
// kvscope::Error (through r.fail) for a value the family cannot have.
void read_family(const ConfigReader& r, ModelConfig& c);

} // namespace detail
} // namespace kvscope

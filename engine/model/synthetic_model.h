#pragma once

#include <cstdint>
#include <string>

#include "engine/model/ggml_type.h"
#include "engine/presets/model_presets.h"

namespace kvscope {

// Writes a GGUF model of a real model's shape with random weights (normal,
// std 0.02, so activations stay finite; norms 1) and a placeholder
// SentencePiece vocabulary of the right size (<unk>, <s>, </s>, the 256 byte
// tokens, then "▁t<N>" pieces). It runs like the real model and costs the
// same memory and time, but its text is meaningless. Matrices are stored in
// `type` (F32, F16, BF16, Q8_0, Q4_0), norms in F32. A non-empty
// `chat_template` (Jinja text) is written as tokenizer.chat_template, so the
// model can be chatted with and served through a chat API (ChatTemplate
// recognises its family by that text).
void write_synthetic_model(const ModelGeometry& geometry, GgmlType type, std::uint64_t seed,
                           const std::string& path, const std::string& chat_template = {});

} // namespace kvscope

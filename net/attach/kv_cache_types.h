// net/attach: the KV cache types servers name, and their bytes. One table:
// llama.cpp's -ctk/-ctv names (common/arg.cpp's kv_cache_types) map to
// ggml types, whose bytes per block come from the engine's ggml table
// (engine/model/ggml_type.h); vLLM's --kv-cache-dtype names are 16- or
// 8-bit floats.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "engine/model/ggml_type.h"

namespace kvscope::attach {

// The ggml type of a llama.cpp cache type name ("f16", "q8_0", "iq4_nl",
// ...); nullopt for a name llama.cpp does not take.
std::optional<GgmlType> llamacpp_cache_type(std::string_view name);
bool is_llama_cache_type(std::string_view name);
// The names llama-server takes for -ctk/-ctv: f16 (its default) first,
// then f32, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1.
std::vector<std::string_view> llama_cache_types();

// Bits per K or V value of a cache type as llama.cpp or vLLM names it,
// block scales included (q8_0: 34 bytes per 32 values, 8.5 bits); vLLM's
// "auto" is the model's own 16-bit type. nullopt for a name not known here.
std::optional<double> kv_cache_type_bits(std::string_view name);

} // namespace kvscope::attach

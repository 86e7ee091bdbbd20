#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace kvscope {

// The number format K and V are stored in. Quantized formats carry scales;
// their exact byte cost is KvLayout's business (kv_layout.h).
enum class KvDtype : std::uint8_t {
    F32,
    F16,
    BF16,
    Fp8E4M3, // 1 byte per value, one f32 scale per layer, head and K/V (vLLM style)
    Int8,    // 1 byte per value, symmetric, one f16 scale per token and head
    Int4,    // 4 bits per value, asymmetric, f16 scale + f16 zero per group of 32
};

// "f32", "f16", "bf16", "fp8-e4m3", "int8", "int4": the words the CLI, the
// UI and config files use.
std::string_view to_string(KvDtype dtype);

// Parses those words; throws kvscope::Error listing them on anything else.
KvDtype parse_kv_dtype(std::string_view word);

// Every dtype, in the order tables list them (widest first).
std::span<const KvDtype> all_kv_dtypes();

} // namespace kvscope

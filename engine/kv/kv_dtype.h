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
    // KIVI mapped onto paging: a full ("sealed") block stores keys per
    // channel (f16 scale + zero per head_dim channel over the block's
    // tokens) and values per token (groups of 32 like int4); a sequence's
    // last, partially filled block stays in an f16 tail outside the pool.
    Int4Kivi,
    Int2Kivi,
};

// "f32", "f16", "bf16", "fp8-e4m3", "int8", "int4", "int4-kivi",
// "int2-kivi": the words the CLI, the UI and config files use.
std::string_view to_string(KvDtype dtype);

// Parses those words; throws kvscope::Error listing them on anything else.
KvDtype parse_kv_dtype(std::string_view word);

// Every dtype, in the order tables list them (widest first).
std::span<const KvDtype> all_kv_dtypes();

// The KIVI dtypes: a sequence keeps its partial last block in an f16 tail
// and quantizes it into its pool block when it fills.
constexpr bool seals_blocks(KvDtype dtype) { return dtype == KvDtype::Int4Kivi || dtype == KvDtype::Int2Kivi; }

} // namespace kvscope

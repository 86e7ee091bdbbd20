#include "engine/kv/kv_dtype.h"

#include <array>
#include <string>

#include "engine/core/error.h"

namespace kvscope {
namespace {

constexpr std::array kDtypes{KvDtype::F32, KvDtype::F16, KvDtype::BF16,
                             KvDtype::Fp8E4M3, KvDtype::Int8, KvDtype::Int4,
                             KvDtype::Int4Kivi, KvDtype::Int2Kivi};

} // namespace

std::string_view to_string(KvDtype dtype) {
    switch (dtype) {
    case KvDtype::F32: return "f32";
    case KvDtype::F16: return "f16";
    case KvDtype::BF16: return "bf16";
    case KvDtype::Fp8E4M3: return "fp8-e4m3";
    case KvDtype::Int8: return "int8";
    case KvDtype::Int4: return "int4";
    case KvDtype::Int4Kivi: return "int4-kivi";
    case KvDtype::Int2Kivi: return "int2-kivi";
    }
    return "?";
}

KvDtype parse_kv_dtype(std::string_view word) {
    for (KvDtype dtype : kDtypes)
        if (to_string(dtype) == word)
            return dtype;
    std::string known;
    for (KvDtype dtype : kDtypes)
        known += (known.empty() ? "" : ", ") + std::string(to_string(dtype));
    throw Error("unknown KV dtype '" + std::string(word) + "' (expected one of " + known + ")");
}

std::span<const KvDtype> all_kv_dtypes() { return kDtypes; }

} // namespace kvscope

#pragma once

#include <cstdint>

#include "engine/model/ggml_type.h"

namespace kvscope {

// Encodes n floats (a whole number of blocks) into `type`'s GGUF block
// format, rounding as ggml's reference quantizers do. Supported: F32, F16,
// BF16, Q8_0, Q4_0. Throws kvscope::Error for other types.
void quantize_row(GgmlType type, const float* src, void* dst, std::uint64_t n);

} // namespace kvscope

#pragma once

#include <cstdint>
#include <span>

#include "engine/model/ggml_type.h"

namespace kvscope {

// Encodes n floats (a whole number of blocks) into `type`'s GGUF block
// format. F32, F16, BF16, Q8_0, Q4_0 and Q5_0 round as ggml's reference
// quantizers do; MXFP4 gives quantize_row_mxfp4_ref's bytes exactly (what
// llama-quantize writes for MXFP4, which takes no importance matrix). Q4_1, Q5_1, IQ4_NL, IQ4_XS, Q2_K and Q3_K fit each
// (sub-)block's scale (and min) by a small search: a few candidate scales,
// each with round-to-nearest codes and a least-squares refit, the one of
// least squared error kept; super-block scales are then rounded to their
// 4 or 6 bits and the codes chosen again. The blocks are valid and the
// error is that of a sound round-to-nearest quantizer, but the choices are
// not llama.cpp's (whose searches are longer and importance-weighted), so
// files differ from llama-quantize's. Throws kvscope::Error for other types.
void quantize_row(GgmlType type, const float* src, void* dst, std::uint64_t n);

// The types quantize_row writes, in ggml's numbering order.
std::span<const GgmlType> quantizable_types();

} // namespace kvscope

#pragma once

#include <cstdint>

#include "kernels/cpu/paged_kv.h"

namespace kvscope::kernels::cpu {

// Stores one token's K and V (each n_kv_heads x head_dim floats, row-major)
// into `slot` of physical block `block`, quantizing to kv.elem as it goes:
//   f16, bf16  round to nearest even
//   fp8-e4m3   x / (its head's fixed scale), rounded to nearest even e4m3,
//              saturating at +-448
//   int8       symmetric per row: scale = max|x| / 127 (stored as f16),
//              code = round(x / scale) in [-127, 127]
//   int4       per group of 32: scale = (max - min) / 15 and zero = min
//              (both f16), code = round((x - zero) / scale) in [0, 15]
//   KIVI       the token goes, in f16, into slot `slot` of the sequence's
//              tail (`tail`: its KIVI tail, all layers). When `slot` is the
//              block's last the block is sealed: keys are quantized per
//              channel over the block's slots, values per token (int4's
//              groups), with 15 (int4) or 3 (int2) levels, into `block`.
// Codes are computed against the f16-rounded scale and zero the reader
// will use. Throws std::invalid_argument for a bad description, a block id
// >= kv.n_blocks, a slot >= kv.block_size, a KIVI write without a tail or a
// fp8 head scale that is not positive.
void write_kv(const PagedKv& kv, std::uint32_t block, std::uint32_t slot, const float* k, const float* v,
              std::byte* tail = nullptr);

} // namespace kvscope::kernels::cpu

#pragma once

#include <cstdint>

#include "kernels/cpu/paged_kv.h"

namespace kvscope::kernels::cpu {

// Stores one token's K and V (each n_kv_heads x head_dim floats, row-major)
// into `slot` of physical block `block`, converting to kv.elem (f16 rounds
// to nearest even). Throws std::invalid_argument for a bad description, a
// block id >= kv.n_blocks or a slot >= kv.block_size.
void write_kv(const PagedKv& kv, std::uint32_t block, std::uint32_t slot, const float* k,
              const float* v);

} // namespace kvscope::kernels::cpu

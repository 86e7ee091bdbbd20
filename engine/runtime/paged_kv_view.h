// The one translation from the engine's KvLayout to the kernels' PagedKv:
// the runner, the tests and `bench attention` all describe a layer of a
// pool through it, so kernels and accounting can never disagree.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kv/kv_layout.h"
#include "kernels/cpu/paged_kv.h"

namespace kvscope {

kernels::cpu::KvElem to_kv_elem(KvDtype dtype);

// Layer `layer` of a pool of n_blocks blocks laid out by `layout`.
// fixed_scales: the pool's fp8 scales (layout.fixed_bytes() / 4 floats),
// null for other dtypes.
kernels::cpu::PagedKv paged_kv_view(const KvLayout& layout, std::uint32_t layer, std::byte* pool,
                                    std::size_t n_blocks, const float* fixed_scales);

} // namespace kvscope

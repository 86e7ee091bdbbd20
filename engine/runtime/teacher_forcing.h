// engine/runtime: teacher forcing, the plain reference path of the accuracy
// checks: a known token sequence fed one position at a time through the CPU
// forward pass and a paged KV cache of its own, every position's logits kept.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_ids.h"
#include "engine/runtime/model.h"

namespace kvscope {

// The logits at every position of `tokens` (tokens.size() x vocab_size),
// each computed as a decode step reading the positions before it from a
// `kv_dtype` cache. `threads`: the kernels' thread count (0: one per core).
// Throws kvscope::Error for an empty sequence or one beyond the context.
std::vector<float> teacher_forced_logits(const Model& model, std::span<const TokenId> tokens, KvDtype kv_dtype,
                                         std::uint32_t block_size = 16, int threads = 0);

} // namespace kvscope

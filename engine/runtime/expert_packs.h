// The CPU's packed copies of a mixture-of-experts model's expert matrices,
// made the first time the router picks each expert rather than at load.
//
// Why lazily: a MoE model's experts are most of its bytes (gpt-oss-20b:
// ~11 of ~12 GiB) and a token reads only `used` of them. Packing every
// expert at load would read the whole file and keep a copy of it; packing
// on first use reads only the experts a conversation routes to, and once an
// expert is packed its pages of the mapped file are released, so each
// expert counts once in the resident size, and unused ones not at all.
//
// Thread safety: get() may be called from any thread (engines sharing a
// Model share one ExpertPacks); each matrix is packed exactly once
// (std::call_once), and a packed copy never moves or changes afterwards.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "engine/model/gguf_file.h"
#include "engine/runtime/model_weights.h"
#include "kernels/cpu/packed_weights.h"

namespace kvscope {

class ExpertPacks {
public:
    // Room for `matrices` packed copies; `file` (the experts' mapping)
    // must outlive this object.
    ExpertPacks(const GgufFile& file, std::size_t matrices);

    // Matrix `index` (< matrices; the caller numbers them, one number per
    // expert matrix) as the forward pass reads it: `m` with its packed
    // copy when the CPU has tile kernels for its type, packing it on
    // `threads` threads first if this is its first use; `m` unchanged
    // otherwise. Throws std::bad_alloc when memory runs out (the matrix
    // stays unpacked and the next call tries again).
    WeightMatrix get(std::size_t index, const WeightMatrix& m, int threads) const;

    std::size_t packed_count() const { return count_.load(std::memory_order_relaxed); }
    std::size_t packed_bytes() const { return bytes_.load(std::memory_order_relaxed); }

private:
    const GgufFile& file_;
    std::size_t matrices_;
    std::unique_ptr<std::once_flag[]> once_;
    std::unique_ptr<kernels::cpu::PackedWeights[]> packed_;
    mutable std::atomic<std::size_t> count_{0}, bytes_{0};
};

// The number ExpertPacks::get takes for expert `expert`'s `matrix` (0 gate,
// 1 up, 2 down) in `layer` of a model with `experts` experts per layer.
constexpr std::size_t expert_matrix_index(std::size_t layer, std::size_t expert, std::size_t matrix,
                                          std::size_t experts) {
    return (layer * experts + expert) * 3 + matrix;
}

} // namespace kvscope

// A weight matrix repacked once, at model load, into the interleaved-row
// tiles the SIMD tile kernels read (packed_kernel.h says why). matmul uses
// the packed copy when a MatmulJob names one and the AVX2 path is in use;
// the portable path, and types or CPUs without tile kernels, read the GGUF
// bytes as they are.
//
// One packed copy per model: engines that share a Model share its packed
// weights (engine/runtime/model.h), so Compare A/B does not double them.
#pragma once

#include <cstddef>
#include <memory>

#include "kernels/cpu/weight_type.h"

namespace kvscope::kernels::cpu {

class PackedWeights {
public:
    PackedWeights() = default; // empty: nothing packed

    // Packs `rows` x `cols` weights W (GGUF layout, as matmul takes them)
    // on `threads` threads. Returns an empty object when this build or CPU
    // has no tile kernel for the type; then matmul reads W itself. Throws
    // std::invalid_argument for a cols that is not a whole number of blocks
    // or a null W, std::bad_alloc when memory runs out.
    static PackedWeights pack(WeightType type, const void* W, std::size_t rows, std::size_t cols, int threads);

    explicit operator bool() const { return data_ != nullptr; }
    WeightType type() const { return type_; }
    std::size_t rows() const { return rows_; }
    std::size_t cols() const { return cols_; }
    std::size_t tiles() const { return tiles_; }
    std::size_t tile_bytes() const { return tile_bytes_; }
    std::size_t bytes() const { return tiles_ * tile_bytes_; }
    // Tile t holds rows [16 t, 16 t + 16); 64-byte aligned.
    const std::byte* tile(std::size_t t) const { return data_.get() + t * tile_bytes_; }

private:
    struct FreeAligned {
        void operator()(std::byte* p) const;
    };
    WeightType type_ = WeightType::F32;
    std::size_t rows_ = 0, cols_ = 0, tiles_ = 0, tile_bytes_ = 0;
    std::unique_ptr<std::byte[], FreeAligned> data_;
};

} // namespace kvscope::kernels::cpu

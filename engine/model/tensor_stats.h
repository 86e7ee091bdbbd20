// Totals over a GGUF file's tensors, for `kvscope-cli info` and the UI.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/gguf_file.h"

namespace kvscope {

struct TensorTypeStats {
    GgmlType type;
    std::uint64_t tensors = 0;
    std::uint64_t parameters = 0;
    std::uint64_t bytes = 0;
};

struct TensorStats {
    std::uint64_t tensors = 0;
    std::uint64_t parameters = 0; // values over all tensors; a tied embedding counts once
    std::uint64_t bytes = 0;
    std::vector<TensorTypeStats> by_type; // one per type present, in ggml type order
};

TensorStats tensor_stats(const GgufFile& file);

} // namespace kvscope

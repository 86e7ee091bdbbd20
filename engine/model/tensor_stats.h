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
    // Values in a mixture-of-experts model's expert tensors (ffn_*_exps,
    // weights and biases, every expert); 0 for a dense model.
    std::uint64_t expert_parameters = 0;
    // token_embd's values and row width; whether the file has its own
    // output matrix (else the embedding is also the output, read whole).
    std::uint64_t embedding_parameters = 0;
    std::uint64_t embedding_width = 0;
    bool separate_output = false;
    std::vector<TensorTypeStats> by_type; // one per type present, in ggml type order

    // The values one token computes with: all but the experts the router
    // does not pick ((1 - used / experts) of expert_parameters: every
    // expert has the same size) and the embedding rows of other tokens
    // (unless tied, the embedding is read a row at a time). The published
    // "active parameters" of gpt-oss-20b (3.61B) count the same way.
    std::uint64_t active_parameters(std::uint32_t experts, std::uint32_t used) const;
};

TensorStats tensor_stats(const GgufFile& file);

} // namespace kvscope

#include "engine/model/tensor_stats.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace kvscope {

TensorStats tensor_stats(const GgufFile& file) {
    TensorStats stats;
    for (const GgufTensorInfo& t : file.tensors()) {
        // Fits in 64 bits: no type packs more than 5 values per byte, and
        // the file holds every byte.
        const std::uint64_t values = std::accumulate(t.dims.begin(), t.dims.end(),
                                                     std::uint64_t{1}, std::multiplies<>());
        auto it = std::find_if(stats.by_type.begin(), stats.by_type.end(),
                               [&](const TensorTypeStats& s) { return s.type == t.type; });
        if (it == stats.by_type.end())
            it = stats.by_type.insert(stats.by_type.end(), TensorTypeStats{t.type});
        ++stats.tensors;
        stats.parameters += values;
        stats.bytes += t.n_bytes;
        if (t.name.find("_exps.") != std::string::npos)
            stats.expert_parameters += values;
        if (t.name == "token_embd.weight" && !t.dims.empty()) {
            stats.embedding_parameters = values;
            stats.embedding_width = t.dims[0];
        }
        stats.separate_output = stats.separate_output || t.name == "output.weight";
        ++it->tensors;
        it->parameters += values;
        it->bytes += t.n_bytes;
    }
    std::sort(stats.by_type.begin(), stats.by_type.end(),
              [](const auto& a, const auto& b) { return a.type < b.type; });
    return stats;
}

std::uint64_t TensorStats::active_parameters(std::uint32_t experts, std::uint32_t used) const {
    const std::uint64_t idle_experts =
        experts == 0 ? 0 : expert_parameters / experts * (experts - std::min(used, experts));
    const std::uint64_t other_rows = separate_output ? embedding_parameters - embedding_width : 0;
    return parameters - idle_experts - other_rows;
}

} // namespace kvscope

#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/runtime/expert_packs.h"
#include "engine/runtime/model_weights.h"

namespace kvscope {

// A GGUF model ready to run: the mapped file, its configuration and the
// weights bound to the forward pass. Immovable, because the weights point
// into the mapping; hold it by pointer.
class Model {
public:
    // Throws kvscope::Error naming the file and the problem.
    explicit Model(const std::string& path);
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const GgufFile& file() const { return file_; }
    const ModelConfig& config() const { return config_; }
    // The weights as the file holds them (the CUDA runner uploads these).
    const ModelWeights& weights() const { return weights_; }
    // The same weights for the CPU forward pass: each matrix the CPU has
    // tile kernels for also carries its packed copy (WeightMatrix::packed).
    // Packed on the first call, on that caller's `threads` (0: one per
    // core), once per Model whichever thread calls: every engine sharing
    // this Model shares the copy. The file's pages of each packed matrix are
    // then released (MappedFile::release), so the weights count once in the
    // process's resident memory. A MoE model's experts are packed later, as
    // the router first picks each (expert_packs.h). Throws std::bad_alloc
    // when memory runs out.
    const ModelWeights& cpu_weights(int threads = 0) const;

private:
    // cpu_weights' result: the packed copies (a deque: the matrices point
    // at them) and the weights pointing at them.
    struct CpuWeights {
        std::deque<kernels::cpu::PackedWeights> packed;
        ModelWeights weights;
        std::unique_ptr<ExpertPacks> experts; // null for a dense model
    };

    GgufFile file_;
    ModelConfig config_;
    ModelWeights weights_;
    mutable std::once_flag pack_once_;
    mutable std::unique_ptr<const CpuWeights> cpu_;
};

} // namespace kvscope

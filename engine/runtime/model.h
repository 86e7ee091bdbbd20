#pragma once

#include <string>

#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
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
    const ModelWeights& weights() const { return weights_; }

private:
    GgufFile file_;
    ModelConfig config_;
    ModelWeights weights_;
};

} // namespace kvscope

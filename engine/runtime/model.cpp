#include "engine/runtime/model.h"

namespace kvscope {

Model::Model(const std::string& path)
    : file_(path), config_(read_model_config(file_)), weights_(file_, config_) {}

} // namespace kvscope

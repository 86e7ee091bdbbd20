#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/runtime/model.h"

namespace kvscope {

// Models open in one process, shared by key: a second engine that opens a
// model already open (the app's Compare A/B engine B, which runs A's model)
// gets the same Model, and so one file mapping and one packed copy of the
// weights between them (Model::cpu_weights). A model is remembered only
// while someone holds it. Thread-safe: engines load on their own threads;
// loads run one at a time, so two engines opening the same model at once
// load it once.
class SharedModels {
public:
    using Loader = std::function<std::shared_ptr<const Model>()>;

    // The model open under `key`, else load()'s result, remembered under
    // `key`. Exceptions from load() pass through; nothing is remembered.
    std::shared_ptr<const Model> open(const std::string& key, const Loader& load);

    // The key of a GGUF file: its canonical path, size and modification
    // time, so a file rewritten in place opens as another model. Throws
    // kvscope::Error when the file cannot be read.
    static std::string file_key(const std::string& path);

private:
    std::mutex mutex_;
    std::map<std::string, std::weak_ptr<const Model>> open_;
};

} // namespace kvscope

#include "engine/runtime/shared_models.h"

#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

#include "engine/core/error.h"

namespace kvscope {

std::shared_ptr<const Model> SharedModels::open(const std::string& key, const Loader& load) {
    const std::lock_guard lock(mutex_);
    std::erase_if(open_, [](const auto& entry) { return entry.second.expired(); });
    if (const auto it = open_.find(key); it != open_.end())
        if (std::shared_ptr<const Model> model = it->second.lock())
            return model;
    std::shared_ptr<const Model> model = load();
    open_[key] = model;
    return model;
}

std::string SharedModels::file_key(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::path canonical = fs::canonical(path, error);
    const auto size = error ? 0 : fs::file_size(canonical, error);
    const auto modified = error ? fs::file_time_type{} : fs::last_write_time(canonical, error);
    if (error)
        throw Error(path + ": " + error.message());
    return canonical.string() + '\n' + std::to_string(size) + '\n' +
           std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(modified.time_since_epoch()).count());
}

} // namespace kvscope

#pragma once

#include <memory>
#include <string_view>

#include <spdlog/logger.h>

namespace kvscope {

// One named logger per layer ("engine", "kv", "model", "ui", "app", ...),
// created on first use and writing to stderr.
std::shared_ptr<spdlog::logger> logger(std::string_view layer);

// Sets the level of every logger, present and future: trace, debug, info,
// warn, error, critical or off. Throws kvscope::Error on another word.
void set_log_level(std::string_view level);

} // namespace kvscope

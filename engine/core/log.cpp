#include "engine/core/log.h"

#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "engine/core/error.h"

namespace kvscope {

std::shared_ptr<spdlog::logger> logger(std::string_view layer) {
    const std::string name(layer);
    if (auto existing = spdlog::get(name))
        return existing;
    // Two threads may race to create the same logger; spdlog's registry
    // throws for the loser, which then takes the winner's.
    try {
        auto created = spdlog::stderr_color_mt(name);
        created->set_level(spdlog::get_level());
        return created;
    } catch (const spdlog::spdlog_ex&) {
        return spdlog::get(name);
    }
}

void set_log_level(std::string_view level) {
    const auto parsed = spdlog::level::from_str(std::string(level));
    if (parsed == spdlog::level::off && level != "off")
        throw Error("unknown log level '" + std::string(level) +
                    "' (expected trace, debug, info, warn, error, critical or off)");
    spdlog::set_level(parsed); // applies to registered loggers and the default for new ones
}

} // namespace kvscope

#include "app/cli/args.h"

#include <charconv>
#include <cmath>
#include <string_view>
#include <utility>

#include "engine/core/error.h"

namespace kvscope::cli {

std::optional<std::string> Args::subcommand() {
    for (auto& word : words_) {
        if (word.empty())
            continue;
        if (word.starts_with("-"))
            return std::nullopt;
        return std::exchange(word, std::string());
    }
    return std::nullopt;
}

bool Args::flag(const std::string& name) {
    for (auto& word : words_)
        if (word == name) {
            word.clear();
            return true;
        }
    return false;
}

std::optional<std::string> Args::value(const std::string& name) {
    for (std::size_t i = 0; i < words_.size(); ++i) {
        if (words_[i] != name)
            continue;
        if (i + 1 >= words_.size() || words_[i + 1].empty())
            throw Error(name + " needs a value");
        std::string v = std::move(words_[i + 1]);
        words_[i].clear();
        words_[i + 1].clear();
        return v;
    }
    return std::nullopt;
}

std::string Args::value_or(const std::string& name, const std::string& fallback) {
    return value(name).value_or(fallback);
}

std::int64_t Args::int_or(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) {
    const auto text = value(name);
    if (!text)
        return fallback;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec != std::errc() || end != text->data() + text->size())
        throw Error(name + " expects a whole number, got '" + *text + "'");
    if (v < min || v > max)
        throw Error(name + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    ", got " + *text);
    return v;
}

double Args::number_or(const std::string& name, double fallback, double min, double max) {
    const auto text = value(name);
    if (!text)
        return fallback;
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(*text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text->size() || !std::isfinite(v))
        throw Error(name + " expects a number, got '" + *text + "'");
    if (v < min || v > max)
        throw Error(name + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
                    ", got " + *text);
    return v;
}

void Args::finish() const {
    for (const auto& word : words_)
        if (!word.empty())
            throw Error("unexpected argument '" + word + "' (see kvscope-cli --help)");
}

} // namespace kvscope::cli

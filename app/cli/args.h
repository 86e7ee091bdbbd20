#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::cli {

// A small "--name value" / "--flag" parser. Commands take what they know;
// finish() then rejects anything left over, so a typo is an error, not a
// silently ignored option.
class Args {
public:
    explicit Args(std::vector<std::string> words) : words_(std::move(words)) {}

    // The first word left, when it is not an option: a subcommand's name.
    std::optional<std::string> subcommand();
    bool flag(const std::string& name);                        // --name
    std::optional<std::string> value(const std::string& name); // --name VALUE
    std::string value_or(const std::string& name, const std::string& fallback);
    std::int64_t int_or(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max);
    double number_or(const std::string& name, double fallback, double min, double max);
    // Throws kvscope::Error naming the first argument nobody took.
    void finish() const;

private:
    std::vector<std::string> words_; // consumed words become empty
};

} // namespace kvscope::cli

#include "app/cli/count_list.h"

#include <exception>

#include "engine/core/error.h"

namespace kvscope::cli {

std::vector<std::uint32_t> parse_count_list(const std::string& option, const std::string& text, std::uint32_t min,
                                            std::uint32_t max) {
    std::vector<std::uint32_t> counts;
    for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        const std::string word = text.substr(start, comma - start);
        std::size_t used = 0;
        long long n = 0;
        try {
            n = std::stoll(word, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != word.size() || word.empty() || n < min || n > max)
            throw Error(option + " takes numbers " + std::to_string(min) + ".." + std::to_string(max) +
                        " separated by commas, got '" + word + "'");
        counts.push_back(static_cast<std::uint32_t>(n));
        if (comma == std::string::npos)
            return counts;
        start = comma + 1;
    }
}

} // namespace kvscope::cli

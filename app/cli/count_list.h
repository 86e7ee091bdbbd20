// Comma-separated counts on the command line: bench attention's --context,
// bench batch's -npp, -ntg and -npl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope::cli {

// "1,4,8" -> {1, 4, 8}, in the order given. Throws kvscope::Error naming
// `option` and the range on an empty word, a non-number or one outside
// [min, max].
std::vector<std::uint32_t> parse_count_list(const std::string& option, const std::string& text, std::uint32_t min,
                                            std::uint32_t max);

} // namespace kvscope::cli

// engine/tokenizer: encoding speed, for `kvscope-cli bench`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace kvscope {

// Encodes `text` repeatedly on this thread for about a quarter of a second
// and returns the speed in MB (10^6 bytes) of input per second.
double bench_encode_mb_per_s(const Tokenizer& tokenizer, std::string_view text);

// About `bytes` of English-like prose, the same for the same seed:
// sentences of common English words drawn with Zipf-like frequencies, one
// word in eight made up from syllables (so that, as in real text, many
// words occur only a few times), capitals, commas, numbers, quotes and
// paragraphs.
std::string english_like_text(std::size_t bytes, std::uint64_t seed = 1);

} // namespace kvscope

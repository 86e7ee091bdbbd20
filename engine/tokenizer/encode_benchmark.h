// engine/tokenizer: encoding speed, for `kvscope-cli bench`.
#pragma once

#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace kvscope {

// Encodes `text` repeatedly on this thread for about a quarter of a second
// and returns the speed in MB (10^6 bytes) of input per second.
double bench_encode_mb_per_s(const Tokenizer& tokenizer, std::string_view text);

} // namespace kvscope

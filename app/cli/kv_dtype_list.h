#pragma once

#include <string_view>
#include <vector>

#include "engine/kv/kv_dtype.h"

namespace kvscope::cli {

// "f16,int8,int4" -> {F16, Int8, Int4}, in the order given, repeats dropped.
// Throws kvscope::Error on an empty list or an unknown word (listing the
// known ones).
std::vector<KvDtype> parse_kv_dtype_list(std::string_view text);

} // namespace kvscope::cli

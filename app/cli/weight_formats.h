#pragma once

#include <cstdint>
#include <string>

namespace kvscope::cli {

// Bytes of `parameters` weights stored in a GGUF tensor type ("f16",
// "q8_0", "q4_k", ...): whole quantization blocks, scales included.
std::uint64_t weight_bytes(std::uint64_t parameters, const std::string& type);
std::string weight_format_names();

} // namespace kvscope::cli

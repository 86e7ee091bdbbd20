#pragma once

#include <cstdint>
#include <string_view>

namespace kvscope {

// How a KvCacheManager hands out blocks.
enum class AllocationMode : std::uint8_t {
    Paged,      // vLLM: a block at a time, as tokens arrive, anywhere in the pool
    Contiguous, // pre-vLLM: prompt + max_new_tokens reserved up front as one run of consecutive blocks
};

std::string_view to_string(AllocationMode mode); // "paged", "contiguous"
AllocationMode parse_allocation_mode(std::string_view word); // throws kvscope::Error

} // namespace kvscope

#include "engine/kv/allocation_mode.h"

#include <string>

#include "engine/core/error.h"

namespace kvscope {

std::string_view to_string(AllocationMode mode) {
    return mode == AllocationMode::Paged ? "paged" : "contiguous";
}

AllocationMode parse_allocation_mode(std::string_view word) {
    if (word == "paged")
        return AllocationMode::Paged;
    if (word == "contiguous")
        return AllocationMode::Contiguous;
    throw Error("unknown allocation mode '" + std::string(word) + "' (expected paged or contiguous)");
}

} // namespace kvscope

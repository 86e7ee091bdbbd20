#include "app/cli/kv_dtype_list.h"

#include <algorithm>

#include "engine/core/error.h"

namespace kvscope::cli {

std::vector<KvDtype> parse_kv_dtype_list(std::string_view text) {
    if (text.empty())
        throw Error("--kv-dtype needs at least one KV dtype");
    std::vector<KvDtype> dtypes;
    for (std::size_t start = 0;;) {
        const std::size_t comma = text.find(',', start);
        const KvDtype d = parse_kv_dtype(text.substr(start, comma - start)); // an empty word is an error too
        if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end())
            dtypes.push_back(d);
        if (comma == std::string_view::npos)
            return dtypes;
        start = comma + 1;
    }
}

} // namespace kvscope::cli

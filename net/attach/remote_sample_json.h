// net/attach: a RemoteSample as JSON, what `kvscope-cli top --json` prints
// (README, "Attaching to a running server", lists the keys). Unknown
// figures are null, never 0; what the kind of server cannot tell is said
// in `cannot_tell`. A kvscope server's engine snapshot is not repeated
// (its `/kv/snapshot` gives it): only its step, as `engine_step`. `kind`
// is null while the link is Connecting: the kind may not be detected yet.
#pragma once

#include <nlohmann/json.hpp>

#include "net/attach/remote_sample.h"

namespace kvscope::attach {

nlohmann::ordered_json to_json(const ServerFigures& figures);
nlohmann::ordered_json to_json(const PrefixCacheSample& prefix_cache);
nlohmann::ordered_json to_json(const RemoteSample& sample);

} // namespace kvscope::attach

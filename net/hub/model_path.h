// net/hub: the one place a model path a person typed becomes a file:
// kvscope-cli's --model / -hf / info FILE and the app's --model all call
// resolve_model_path, so "hf://ORG/NAME[:QUANT]" means the same everywhere.
#pragma once

#include <cstdio>
#include <string>

#include "net/hub/hub_client.h"

namespace kvscope::hub {

// `text` itself when it is not a hub reference; else the first file of the
// model it names: from the cache when there (no network), else pulled with
// the settings from the environment (hub_settings.h), `progress` told.
// Throws HubError as pull does.
std::string resolve_model_path(const std::string& text, const PullProgress& progress = {});

// Progress for a person at a terminal: one line on `out`, rewritten in
// place (format_progress), ended when a file is done. Says nothing when
// `out` is not a terminal.
PullProgress terminal_progress(std::FILE* out);

} // namespace kvscope::hub

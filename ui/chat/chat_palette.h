#pragma once

#include "engine/engine_snapshot.h"
#include "ui/blockmap/sequence_palette.h"

namespace kvscope::ui {

// The chat a request came from: its client tag (the app tags each turn
// with its chat's number, from 1); 0 for none (workload requests, a
// server's clients).
int chatOf(std::uint64_t client_tag);

// A block map palette for one snapshot: a chat's sequences in its tab's
// colour and named after it, blocks its ended turns left in the prefix
// cache attributed to it; workload sequences in muted colours.
SequencePalette chatPalette(const EngineSnapshot& snapshot);

} // namespace kvscope::ui

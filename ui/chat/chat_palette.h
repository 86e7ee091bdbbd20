#pragma once

#include <unordered_map>

#include "engine/engine_snapshot.h"
#include "ui/blockmap/sequence_palette.h"

namespace kvscope::ui {

// Which chat sent each request, as an engine's chatStarted signals said.
using RequestChats = std::unordered_map<RequestId, int>;

// A block map palette for one snapshot: a chat's sequences in its tab's
// colour and named after it, blocks its ended turns left in the prefix
// cache attributed to it; workload sequences in muted colours.
SequencePalette chatPalette(const EngineSnapshot& snapshot, const RequestChats& chats);

} // namespace kvscope::ui

#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <QMetaType>

#include "engine/chat/reasoning_split.h"
#include "engine/engine_snapshot.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"
#include "ui/bridge/model_source.h"

namespace kvscope {
class ChatTemplate;
class EngineService;
class Model;
} // namespace kvscope

namespace kvscope::ui {

// What the model info panel and the status bar say about the loaded model
// and its engine, computed once on the worker thread at load. KV bytes come
// from the engine's KvLayout.
struct ModelSummary {
    ModelSource source;
    std::shared_ptr<const Model> model; // immutable: panels may read it on their own threads
    ModelConfig config;
    TensorStats tensors;
    std::string chat_template; // "llama3 (3.1+, dated)", or "none" (plain completion)
    bool chat_template_known = false;
    ReasoningMode reasoning; // how the template's replies carry reasoning (the chat shows it apart)
    std::string kv_dtype;
    std::size_t kv_bytes_per_token = 0;
    std::uint32_t block_size = 0;
    std::uint32_t kv_blocks = 0;
    std::size_t kv_pool_bytes = 0;
    DeviceSnapshot device; // where the engine runs and its pool lives, as its snapshots say
    int threads = 0;
};

// `chat`: the template the controller uses.
ModelSummary summarize(const ModelSource& source, std::shared_ptr<const Model> model, const EngineService& engine,
                       const ChatTemplate& chat);

} // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::ui::ModelSummary)

#include "ui/bridge/model_summary.h"

#include "engine/service/engine_service.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope::ui {

ModelSummary summarize(const ModelSource& source, std::shared_ptr<const Model> model, const EngineService& engine,
                       const ChatTemplate& chat) {
    const std::shared_ptr<const EngineSnapshot> first = engine.snapshot(); // published at construction
    const KvLayout& layout = first->pool->layout;
    const auto blocks = static_cast<std::uint32_t>(first->pool->blocks.size());
    ModelSummary s;
    s.source = source;
    s.model = std::move(model);
    s.config = engine.model().config();
    s.tensors = tensor_stats(engine.model().file());
    s.chat_template = chat.description();
    s.chat_template_known = chat.supported();
    s.reasoning = reasoning_mode(chat);
    s.kv_dtype = std::string(to_string(layout.dtype()));
    s.kv_bytes_per_token = layout.bytes_per_token();
    s.block_size = layout.block_size();
    s.kv_blocks = blocks;
    s.kv_pool_bytes = std::size_t{blocks} * layout.bytes_per_block() + layout.fixed_bytes();
    s.device = first->device;
    s.threads = engine.threads();
    return s;
}

} // namespace kvscope::ui

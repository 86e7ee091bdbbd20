#include "ui/bridge/model_summary.h"

#include "engine/engine.h"

namespace kvscope::ui {

ModelSummary summarize(const ModelSource& source, std::shared_ptr<const Model> model, const Engine& engine,
                       const std::string& chatTemplate, bool chatTemplateKnown) {
    const KvLayout& layout = engine.kv().layout();
    const std::uint32_t blocks = engine.kv().config().num_blocks;
    ModelSummary s;
    s.source = source;
    s.model = std::move(model);
    s.config = engine.model().config();
    s.tensors = tensor_stats(engine.model().file());
    s.chat_template = chatTemplate;
    s.chat_template_known = chatTemplateKnown;
    s.kv_dtype = std::string(to_string(layout.dtype()));
    s.kv_bytes_per_token = layout.bytes_per_token();
    s.block_size = layout.block_size();
    s.kv_blocks = blocks;
    s.kv_pool_bytes = std::size_t{blocks} * layout.bytes_per_block() + layout.fixed_bytes();
    s.device = engine.snapshot()->device;
    s.threads = engine.threads();
    return s;
}

} // namespace kvscope::ui

// Runs an Engine to completion and collects each sequence's output.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "support/test_models.h"

namespace kvscope::test {

struct Collected {
    std::vector<TokenId> tokens;
    std::string text;
    std::optional<FinishReason> finish;
    std::string error;
};

// Outputs keyed by (request, sample index).
using Outputs = std::map<std::pair<RequestId, std::uint32_t>, Collected>;

inline const Collected& of(Outputs& outputs, RequestId request, std::uint32_t index) {
    return outputs[{request, index}];
}

inline void collect_into(Engine& engine, Outputs& outputs) {
    engine.set_output_callback([&outputs](const RequestOutput& o) {
        Collected& c = outputs[{o.request, o.index}];
        if (o.finish != FinishReason::Stop)
            c.tokens.insert(c.tokens.end(), o.tokens.begin(), o.tokens.end());
        c.text += o.text;
        if (o.finish) {
            c.finish = o.finish;
            c.error = o.error;
        }
    });
}

inline void drain(Engine& engine, int max_steps = 100000) {
    for (int i = 0; i < max_steps && engine.has_work(); ++i)
        engine.step();
}

inline EngineConfig small_config(std::uint32_t blocks, std::uint32_t block_size = 16) {
    EngineConfig c;
    c.kv_dtype = KvDtype::F32;
    c.block_size = block_size;
    c.num_blocks = blocks;
    c.watermark = 0.0;
    return c;
}

} // namespace kvscope::test

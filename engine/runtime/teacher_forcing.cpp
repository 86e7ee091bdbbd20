#include "engine/runtime/teacher_forcing.h"

#include <string>

#include "engine/core/error.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/runtime/runner.h"

namespace kvscope {

std::vector<float> teacher_forced_logits(const Model& model, std::span<const TokenId> tokens, KvDtype kv_dtype,
                                         std::uint32_t block_size, int threads) {
    const ModelConfig& c = model.config();
    if (tokens.empty())
        throw Error("teacher forcing needs at least one token");
    if (c.context_length > 0 && tokens.size() > c.context_length)
        throw Error(std::to_string(tokens.size()) + " tokens exceed the model's context of " +
                    std::to_string(c.context_length) + " tokens");
    constexpr SeqId kSeq = 1;
    const KvLayout layout(c.kv_geometry(), kv_dtype, block_size);
    KvCacheManager kv({layout, static_cast<std::uint32_t>(layout.blocks_for_tokens(tokens.size())),
                       AllocationMode::Paged, false, 0, 0.0, MemoryPlace::Host});
    Runner runner(c, model.cpu_weights(threads), layout, threads);
    std::vector<float> all, logits;
    kv.allocate(kSeq, tokens.first(1), static_cast<std::uint32_t>(tokens.size() - 1));
    for (std::uint32_t p = 0; p < tokens.size(); ++p) {
        if (p > 0)
            kv.append(kSeq, tokens[p]);
        const SeqChunk chunk{kSeq, tokens.subspan(p, 1), p, true};
        runner.forward({&chunk, 1}, kv, logits);
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

} // namespace kvscope

#include "engine/runtime/generation.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/core/error.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/runner.h"

namespace kvscope {
namespace {

constexpr SeqId kSeq = 1;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A pool holding exactly this sequence's blocks.
KvLayout sequence_layout(const Model& model, KvDtype dtype, std::uint32_t block_size) {
    const ModelConfig& c = model.config();
    return KvLayout({c.n_layers, c.n_kv_heads, c.head_dim}, dtype, block_size);
}

KvCacheManager sequence_cache(const KvLayout& layout, std::size_t tokens, Backend backend) {
    return KvCacheManager({layout, static_cast<std::uint32_t>(layout.blocks_for_tokens(tokens)),
                           AllocationMode::Paged, false, 0, 0.0, kv_memory(backend)});
}

void check_fits(const Model& model, std::size_t prompt, std::size_t max_new) {
    if (prompt == 0)
        throw Error("the prompt is empty: at least one token (e.g. BOS) is needed");
    const std::size_t context = model.config().context_length;
    if (context > 0 && prompt + max_new > context)
        throw Error("prompt of " + std::to_string(prompt) + " tokens + " + std::to_string(max_new) +
                    " new tokens exceeds the model's context of " + std::to_string(context) + " tokens");
}

} // namespace

Generator::Generator(const Model& model, const GenerateOptions& options)
    : model_(model),
      layout_(sequence_layout(model, options.kv_dtype, options.block_size)),
      backend_(choose_backend(options.backend, model.config(), layout_)),
      pass_(make_forward_pass(backend_, model, layout_)) {}

Generator::~Generator() = default;

GenerateResult generate(const Model& model, std::span<const TokenId> prompt, const GenerateOptions& options) {
    return Generator(model, options).run(prompt, options);
}

GenerateResult Generator::run(std::span<const TokenId> prompt, const GenerateOptions& options) {
    check_fits(model_, prompt.size(), options.max_new_tokens);
    KvCacheManager kv = sequence_cache(layout_, prompt.size() + options.max_new_tokens, backend_);
    Sampler sampler(options.sampling);
    GenerateResult result;
    result.kv_bytes = kv.layout().bytes_for_tokens(prompt.size() + options.max_new_tokens); // blocks + KIVI tail
    std::vector<TokenId> history(prompt.begin(), prompt.end());

    auto start = std::chrono::steady_clock::now();
    kv.allocate(kSeq, prompt, options.max_new_tokens);
    const SeqChunk first{kSeq, prompt, 0, true};
    std::vector<float> logits;
    pass_->forward({&first, 1}, kv, logits);
    result.prefill_seconds = seconds_since(start);
    start = std::chrono::steady_clock::now();
    while (result.tokens.size() < options.max_new_tokens) {
        if (options.on_logits)
            options.on_logits(logits);
        const TokenId token = sampler.sample(logits, history);
        result.tokens.push_back(token);
        history.push_back(token);
        const bool stop = std::find(options.stop_tokens.begin(), options.stop_tokens.end(), token) !=
                          options.stop_tokens.end();
        if ((options.on_token && !options.on_token(token)) || stop ||
            result.tokens.size() == options.max_new_tokens)
            break;
        const auto position = kv.num_tokens(kSeq);
        kv.append(kSeq, token);
        const SeqChunk next{kSeq, std::span<const TokenId>(&history.back(), 1), position, true};
        pass_->forward({&next, 1}, kv, logits);
    }
    result.decode_seconds = seconds_since(start);
    return result;
}

std::vector<float> teacher_forced_logits(const Model& model, std::span<const TokenId> tokens, KvDtype kv_dtype,
                                         std::uint32_t block_size) {
    check_fits(model, tokens.size(), 0);
    const KvLayout layout = sequence_layout(model, kv_dtype, block_size);
    KvCacheManager kv = sequence_cache(layout, tokens.size(), Backend::Cpu);
    Runner runner(model.config(), model.weights(), layout);
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

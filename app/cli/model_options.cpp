#include "app/cli/model_options.h"

#include <charconv>
#include <cstdint>
#include <cstdio>

#include "engine/core/error.h"
#include "net/hub/model_path.h"

namespace kvscope::cli {

std::optional<std::string> optional_model_path(Args& args) {
    const auto path = args.value("--model");
    const auto hub = args.value("-hf");
    if (path && hub)
        throw Error("--model and -hf both name the model; give one");
    if (hub)
        return resolve_model_path(std::string(hub::kHubScheme) + *hub);
    if (path)
        return resolve_model_path(*path);
    return std::nullopt;
}

std::string required_model_path(Args& args) {
    auto path = optional_model_path(args);
    if (!path)
        throw Error("--model FILE.gguf (or -hf ORG/NAME[:QUANT], a Hugging Face model) is required");
    return *path;
}

std::string resolve_model_path(const std::string& text) {
    return hub::resolve_model_path(text, hub::terminal_progress(stderr));
}

Backend read_backend(Args& args) { return parse_backend(args.value_or("--backend", "auto")); }

int read_threads(Args& args) { return static_cast<int>(args.int_or("--threads", 0, 0, 1024)); }

SamplingParams read_sampling(Args& args) {
    SamplingParams p;
    p.temperature = static_cast<float>(args.number_or("--temp", 0.0, 0.0, 100.0));
    p.top_k = static_cast<std::uint32_t>(args.int_or("--top-k", 0, 0, 1 << 20));
    p.top_p = static_cast<float>(args.number_or("--top-p", 1.0, 0.0, 1.0));
    p.min_p = static_cast<float>(args.number_or("--min-p", 0.0, 0.0, 1.0));
    p.repetition_penalty = static_cast<float>(args.number_or("--repeat-penalty", 1.0, 0.01, 100.0));
    p.seed = static_cast<std::uint64_t>(args.int_or("--seed", 0, 0, INT64_MAX));
    return p;
}

GenerateSettings read_generate_settings(Args& args, std::uint32_t default_new_tokens) {
    GenerateSettings s;
    s.request.max_new_tokens = static_cast<std::uint32_t>(args.int_or("-n", default_new_tokens, 1, 1 << 20));
    s.request.sampling = read_sampling(args);
    s.engine.kv_dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    s.engine.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    s.engine.swa_full = args.flag("--swa-full");
    s.engine.backend = read_backend(args);
    s.engine.threads = read_threads(args);
    return s;
}

void read_serving_options(Args& args, EngineConfig& config, double default_budget_mib) {
    config.kv_budget_mib = args.number_or("--kv-budget-mib", default_budget_mib, 0.001, 1 << 20);
    config.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    config.swa_full = args.flag("--swa-full");
    config.threads = read_threads(args);
    config.backend = read_backend(args);
    config.max_num_seqs = static_cast<std::uint32_t>(args.int_or("--max-seqs", 256, 1, 1 << 20));
    config.max_num_batched_tokens = static_cast<std::uint32_t>(args.int_or("--max-batched-tokens", 512, 1, 1 << 20));
    config.preemption =
        parse_preemption_mode(args.value_or("--preemption", std::string(to_string(EngineConfig{}.preemption))));
}

std::vector<TokenId> parse_token_ids(const std::string& text) {
    std::vector<TokenId> ids;
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end) {
        TokenId id = 0;
        const auto [next, ec] = std::from_chars(p, end, id);
        if (ec != std::errc() || id < 0 || (next < end && *next != ','))
            throw Error("--prompt-ids expects comma-separated token ids, got '" + text + "'");
        ids.push_back(id);
        p = next < end ? next + 1 : next;
    }
    if (ids.empty())
        throw Error("--prompt-ids is empty");
    return ids;
}

} // namespace kvscope::cli

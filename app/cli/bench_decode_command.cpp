// kvscope-cli bench decode: prompt processing and single-sequence decode
// speed, and decode as a fraction of this machine's memory bandwidth.
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/memory_bandwidth.h"
#include "app/cli/model_options.h"
#include "engine/runtime/generation.h"
#include "kernels/cpu/parallel.h"

namespace kvscope::cli {
namespace {

constexpr std::uint32_t kPromptTokens = 128;
constexpr std::uint32_t kDecodeTokens = 128;

// A fixed pseudo-random prompt: BOS, then ids drawn from the vocabulary.
std::vector<TokenId> bench_prompt(const Model& model) {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<TokenId> id(3, static_cast<TokenId>(model.config().vocab_size) - 1);
    std::vector<TokenId> prompt{1};
    while (prompt.size() < kPromptTokens)
        prompt.push_back(id(rng));
    return prompt;
}

} // namespace

int run_bench_decode(Args& args) {
    const std::string path = required_model_path(args);
    apply_threads(args);
    const KvDtype kv_dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    const bool json = args.flag("--json");
    args.finish();

    const Model model(path);
    const auto prompt = bench_prompt(model);
    GenerateOptions o;
    o.max_new_tokens = kDecodeTokens;
    o.kv_dtype = kv_dtype;
    generate(model, std::vector<TokenId>(prompt.begin(), prompt.begin() + 8), GenerateOptions{}); // warm up
    const GenerateResult r = generate(model, prompt, o);

    const double prefill = static_cast<double>(prompt.size()) / r.prefill_seconds;
    // The first new token comes out of the prefill; the rest are decode steps.
    const double decode = static_cast<double>(r.tokens.size() - 1) / r.decode_seconds;
    const double weight_bytes = static_cast<double>(model.weights().bytes_read_per_token());
    const int threads = kernels::cpu::num_threads();
    const double copy_gb_s = measure_copy_bandwidth_gb_per_s(threads);
    const double decode_gb_s = weight_bytes * decode / 1e9;
    if (json) {
        const nlohmann::ordered_json j{{"model", path},
                                       {"threads", threads},
                                       {"kv_dtype", std::string(to_string(kv_dtype))},
                                       {"prefill_tokens_per_second", prefill},
                                       {"decode_tokens_per_second", decode},
                                       {"weight_bytes_per_token", weight_bytes},
                                       {"bandwidth_gb_per_s", decode_gb_s},
                                       {"copy_bandwidth_gb_per_s", copy_gb_s},
                                       {"bandwidth_fraction", decode_gb_s / copy_gb_s}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%s, %d threads, %s KV\n", path.c_str(), threads, std::string(to_string(kv_dtype)).c_str());
    std::printf("  prefill (%u-token prompt)   %10.1f tok/s\n", kPromptTokens, prefill);
    std::printf("  decode  (%u tokens)         %10.1f tok/s\n", kDecodeTokens, decode);
    std::printf("  weights read per token      %10.1f MB\n", weight_bytes / 1e6);
    std::printf("  decode bandwidth            %10.2f GB/s\n", decode_gb_s);
    std::printf("  copy bandwidth (measured)   %10.2f GB/s\n", copy_gb_s);
    std::printf("  fraction of bandwidth limit %10.0f %%\n", 100.0 * decode_gb_s / copy_gb_s);
    return 0;
}

} // namespace kvscope::cli

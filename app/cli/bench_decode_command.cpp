// kvscope-cli bench decode: prompt processing and single-sequence decode
// speed, and decode as a fraction of this machine's memory bandwidth.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/bench/memory_bandwidth.h"
#include "engine/completion.h"

namespace kvscope::cli {
namespace {

constexpr std::uint32_t kPromptTokens = 128;
constexpr std::uint32_t kDecodeTokens = 128;

struct Rates {
    double prefill = 0; // tokens/s
    double decode = 0;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Median rates of `repeats` runs: one run on a shared machine can stray by
// 20%, and a single slow or lucky run should not decide the figure.
Rates measure_rates(Engine& engine, const std::vector<TokenId>& prompt, const RequestParams& params,
                    int repeats) {
    std::vector<double> prefill, decode;
    for (int i = 0; i < repeats; ++i) {
        const Completion r = run_to_completion(engine, prompt, params);
        prefill.push_back(static_cast<double>(prompt.size()) / r.prefill_seconds);
        // The first new token comes out of the prefill; the rest are decode steps.
        decode.push_back(static_cast<double>(r.tokens.size() - 1) / r.decode_seconds);
    }
    return {median(prefill), median(decode)};
}

// A fixed pseudo-random prompt: BOS, then ids drawn from the vocabulary.
std::vector<TokenId> bench_prompt(const Model& model) {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<TokenId> id(3, static_cast<TokenId>(model.config().vocab_size) - 1);
    std::vector<TokenId> prompt{1};
    while (prompt.size() < kPromptTokens)
        prompt.push_back(id(rng));
    return prompt;
}

void print_rates(const std::string& path, const char* backend, KvDtype kv_dtype, double prefill, double decode,
                 bool json) {
    if (json) {
        const nlohmann::ordered_json j{{"model", path},
                                       {"backend", backend},
                                       {"kv_dtype", std::string(to_string(kv_dtype))},
                                       {"prefill_tokens_per_second", prefill},
                                       {"decode_tokens_per_second", decode}};
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    std::printf("%s, %s backend, %s KV\n", path.c_str(), backend, std::string(to_string(kv_dtype)).c_str());
    std::printf("  prefill (%u-token prompt)   %10.1f tok/s\n", kPromptTokens, prefill);
    std::printf("  decode  (%u tokens)         %10.1f tok/s\n", kDecodeTokens, decode);
}

} // namespace

int run_bench_decode(Args& args) {
    const std::string path = required_model_path(args);
    EngineConfig config;
    config.backend = read_backend(args);
    config.threads = read_threads(args);
    config.kv_dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    config.prefix_caching = false; // each run prefills the whole prompt
    config.swa_full = args.flag("--swa-full");
    const KvDtype kv_dtype = config.kv_dtype;
    const bool json = args.flag("--json");
    const auto repeats = static_cast<int>(args.int_or("--repeats", 3, 1, 100));
    args.finish();

    const auto model = std::make_shared<const Model>(path);
    const auto prompt = bench_prompt(*model);
    Engine engine(config_for_one_request(config, model->config(), kPromptTokens + kDecodeTokens), model);
    RequestParams params;
    params.max_new_tokens = kDecodeTokens;
    params.ignore_eos = true; // always kDecodeTokens decode steps
    RequestParams warm_up;
    warm_up.max_new_tokens = 64;
    warm_up.ignore_eos = true;
    run_to_completion(engine, std::vector<TokenId>(prompt.begin(), prompt.begin() + 8), warm_up);
    const auto [prefill, decode] = measure_rates(engine, prompt, params, repeats);
    if (engine.backend() == Backend::Cuda) {
        // The host's copy bandwidth says nothing about a GPU, and the weights
        // there are f16/f32 copies: only the rates are reported.
        print_rates(path, "cuda", kv_dtype, prefill, decode, json);
        return 0;
    }
    const double weight_bytes = static_cast<double>(model->cpu_weights().bytes_read_per_token());
    const int threads = engine.threads();
    const double copy_gb_s = measure_copy_bandwidth_gb_per_s(threads);
    const double decode_gb_s = weight_bytes * decode / 1e9;
    if (json) {
        const nlohmann::ordered_json j{{"model", path},
                                       {"threads", threads},
                                       {"repeats", repeats},
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
    std::printf("%s, %d threads, %s KV, median of %d runs\n", path.c_str(), threads,
                std::string(to_string(kv_dtype)).c_str(), repeats);
    std::printf("  prefill (%u-token prompt)   %10.1f tok/s\n", kPromptTokens, prefill);
    std::printf("  decode  (%u tokens)         %10.1f tok/s\n", kDecodeTokens, decode);
    std::printf("  weights read per token      %10.1f MB\n", weight_bytes / 1e6);
    std::printf("  decode bandwidth            %10.2f GB/s\n", decode_gb_s);
    std::printf("  copy bandwidth (measured)   %10.2f GB/s\n", copy_gb_s);
    std::printf("  fraction of bandwidth limit %10.0f %%\n", 100.0 * decode_gb_s / copy_gb_s);
    return 0;
}

} // namespace kvscope::cli

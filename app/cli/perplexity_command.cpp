// kvscope-cli perplexity: what each KV dtype costs in accuracy on a text,
// next to what it saves in bytes — perplexity, KL divergence and top-1
// agreement against f32 KV, all dtypes in one run.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/kv_dtype_list.h"
#include "app/cli/model_options.h"
#include "app/cli/text_file.h"
#include "engine/core/error.h"
#include "engine/runtime/kv_accuracy.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope::cli {
namespace {

nlohmann::ordered_json report_json(const KvAccuracyReport& r, const std::string& model, const std::string& text) {
    nlohmann::ordered_json j{{"model", model},          {"text_file", text},      {"tokens", r.tokens},
                             {"scored_tokens", r.scored}, {"windows", r.windows}, {"context", r.context},
                             {"rows", nlohmann::ordered_json::array()}};
    for (const KvAccuracyRow& row : r.rows)
        j["rows"].push_back({{"kv_dtype", std::string(to_string(row.kv_dtype))},
                             {"bytes_per_token", row.bytes_per_token},
                             {"saving_vs_f16", row.saving_vs_f16},
                             {"perplexity", row.perplexity},
                             {"delta_pct", row.delta_pct},
                             {"kld", row.kld},
                             {"top1_agreement", row.top1_agreement},
                             {"backend", std::string(to_string(row.backend))}});
    return j;
}

void print_table(const KvAccuracyReport& r, const std::string& model, const std::string& text) {
    std::printf("%s on %s: %zu tokens, %zu scored in %zu window(s) of up to %u tokens\n", model.c_str(),
                text.c_str(), r.tokens, r.scored, r.windows, r.context);
    std::printf("  %-10s %12s %14s %11s %9s %10s %12s %8s\n", "KV dtype", "bytes/token", "saving vs f16",
                "perplexity", "delta %", "mean KLD", "top-1 agree", "backend");
    for (const KvAccuracyRow& row : r.rows)
        std::printf("  %-10s %12.1f %13.2fx %11.4f %+9.3f %10.6f %11.2f%% %8s\n",
                    std::string(to_string(row.kv_dtype)).c_str(), row.bytes_per_token, row.saving_vs_f16,
                    row.perplexity, row.delta_pct, row.kld, 100 * row.top1_agreement,
                    std::string(to_string(row.backend)).c_str());
}

} // namespace

int run_perplexity(Args& args) {
    const std::string path = required_model_path(args);
    const auto text_file = args.value("--text-file");
    const auto dtype_list = args.value("--kv-dtype");
    KvAccuracyOptions options;
    options.context = static_cast<std::uint32_t>(args.int_or("--ctx", 0, 2, 1 << 24));
    options.block_size = static_cast<std::uint32_t>(args.int_or("--block-size", 16, 1, 1024));
    options.backend = read_backend(args);
    options.threads = read_threads(args);
    const bool json = args.flag("--json");
    args.finish();
    if (!text_file)
        throw Error("perplexity needs --text-file FILE");

    const Model model(path);
    const Tokenizer tokenizer(read_vocabulary(model.file()));
    const std::vector<TokenId> tokens = tokenizer.encode(read_text_file(*text_file)); // BOS as the model asks
    options.kv_dtypes = dtype_list ? parse_kv_dtype_list(*dtype_list) : runnable_kv_dtypes(model, options.backend);
    const KvAccuracyReport report = measure_kv_accuracy(model, tokens, options);
    if (json)
        std::printf("%s\n", report_json(report, path, *text_file).dump(2).c_str());
    else
        print_table(report, path, *text_file);
    return 0;
}

} // namespace kvscope::cli

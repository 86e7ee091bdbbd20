// kvscope-cli generate: one prompt through the paged KV cache, streamed.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/completion.h"
#include "engine/core/error.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope::cli {
namespace {

double per_second(std::size_t n, double seconds) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; }

} // namespace

int run_generate(Args& args) {
    const std::string path = required_model_path(args);
    const auto prompt_text = args.value("--prompt");
    const auto prompt_ids_text = args.value("--prompt-ids");
    GenerateSettings g = read_generate_settings(args, 64);
    g.request.ignore_eos = args.flag("--ignore-eos");
    const bool json = args.flag("--json");
    args.finish();
    if (prompt_text.has_value() == prompt_ids_text.has_value())
        throw Error("generate needs exactly one of --prompt TEXT and --prompt-ids 1,2,3");

    const auto model = std::make_shared<const Model>(path);
    const Tokenizer tokenizer(read_vocabulary(model->file()));
    const std::vector<TokenId> prompt = prompt_text ? tokenizer.encode(*prompt_text) : parse_token_ids(*prompt_ids_text);
    const std::size_t tokens = prompt.size() + g.request.max_new_tokens;
    Engine engine(config_for_one_request(g.engine, model->config(), tokens), model);
    const Completion r = run_to_completion(engine, prompt, g.request, [&](const RequestOutput& out) {
        if (!json) {
            std::fputs(out.text.c_str(), stdout);
            std::fflush(stdout);
        }
    });
    const std::size_t kv_bytes = engine.kv().layout().bytes_for_tokens(tokens); // blocks + KIVI tail
    const double prefill_tps = per_second(prompt.size(), r.prefill_seconds);
    const double decode_tps = per_second(r.tokens.size() > 0 ? r.tokens.size() - 1 : 0, r.decode_seconds);
    const std::string kv_dtype(to_string(g.engine.kv_dtype));
    if (json) {
        const nlohmann::ordered_json j{{"prompt_token_ids", prompt},
                                       {"generated_token_ids", r.tokens},
                                       {"text", r.text},
                                       {"prefill_tokens_per_second", prefill_tps},
                                       {"decode_tokens_per_second", decode_tps},
                                       {"kv_dtype", kv_dtype},
                                       {"kv_pool_bytes", kv_bytes}};
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
        std::printf("\n");
        std::fprintf(stderr, "[%zu prompt tokens at %.1f tok/s, %zu generated at %.1f tok/s, KV pool %zu bytes (%s)]\n",
                     prompt.size(), prefill_tps, r.tokens.size(), decode_tps, kv_bytes, kv_dtype.c_str());
    }
    return 0;
}

} // namespace kvscope::cli

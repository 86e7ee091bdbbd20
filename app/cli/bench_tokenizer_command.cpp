// kvscope-cli bench tokenizer: encoding speed of a model's tokenizer on one
// thread, in MB of text per second. Reads only the vocabulary.
#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "app/cli/text_file.h"
#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/encode_benchmark.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope::cli {
namespace {

constexpr std::size_t kGeneratedBytes = 4'000'000;

} // namespace

int run_bench_tokenizer(Args& args) {
    const std::string path = required_model_path(args);
    const auto text_file = args.value("--text-file");
    const bool json = args.flag("--json");
    args.finish();

    using Clock = std::chrono::steady_clock;
    const Clock::time_point load_start = Clock::now();
    const GgufFile file(path);
    const Tokenizer tokenizer(read_vocabulary(file));
    const double load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();

    const std::string text = text_file ? read_text_file(*text_file) : english_like_text(kGeneratedBytes);
    const std::string source = text_file ? *text_file : "generated English-like text";
    const std::size_t n_tokens = tokenizer.encode(text).size(); // also warms up
    const double mb_per_s = bench_encode_mb_per_s(tokenizer, text);
    const double tokens_per_s = mb_per_s * 1e6 / static_cast<double>(text.size()) * static_cast<double>(n_tokens);
    const double seconds_per_100k = tokens_per_s > 0 ? 100000.0 / tokens_per_s : 0.0;
    const Vocabulary& vocab = tokenizer.vocabulary();
    const std::string kind =
        vocab.model == "gpt2" ? "gpt2 (byte-level BPE, pre " + std::string(to_string(choose_pre_tokenizer(vocab.pre).kind)) + ")"
                              : vocab.model + " (SentencePiece BPE)";

    if (json) {
        const nlohmann::ordered_json j{{"model", path},
                                       {"tokenizer", vocab.model},
                                       {"pre", vocab.pre},
                                       {"vocabulary_size", tokenizer.n_tokens()},
                                       {"text", source},
                                       {"text_bytes", text.size()},
                                       {"tokens", n_tokens},
                                       {"bytes_per_token", static_cast<double>(text.size()) / static_cast<double>(n_tokens ? n_tokens : 1)},
                                       {"mb_per_s", mb_per_s},
                                       {"tokens_per_s", tokens_per_s},
                                       {"seconds_per_100k_tokens", seconds_per_100k},
                                       {"load_seconds", load_seconds},
                                       {"threads", 1}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("tokenizer      %s, %d tokens (loaded in %.0f ms)\n", kind.c_str(), tokenizer.n_tokens(),
                load_seconds * 1e3);
    std::printf("text           %s: %zu bytes, %zu tokens (%.2f bytes/token)\n", source.c_str(), text.size(),
                n_tokens, static_cast<double>(text.size()) / static_cast<double>(n_tokens ? n_tokens : 1));
    std::printf("encode         %.2f MB/s, %.0f tokens/s on one thread\n", mb_per_s, tokens_per_s);
    std::printf("100k tokens    %.3f s\n", seconds_per_100k);
    return 0;
}

} // namespace kvscope::cli

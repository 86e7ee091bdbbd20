#include "engine/tokenizer/vocabulary.h"

#include <cstdint>
#include <limits>
#include <optional>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/pre_tokenizer.h"

namespace kvscope {
namespace {

// A token id key, or `fallback` when absent.
std::int32_t read_id(const GgufFile& file, std::string_view name, std::int32_t fallback) {
    const std::string key = "tokenizer.ggml." + std::string(name);
    const std::optional<std::uint64_t> id = file.get_uint(key);
    if (!id) return fallback;
    if (*id > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
        throw Error(file.path() + ": " + key + " = " + std::to_string(*id) +
                    " does not fit a 32-bit token id");
    return static_cast<std::int32_t>(*id);
}

} // namespace

Vocabulary read_vocabulary(const GgufFile& file) {
    Vocabulary v;
    v.model = file.get_string("tokenizer.ggml.model").value_or(std::string());
    if (v.model.empty())
        throw Error(file.path() + ": no tokenizer (tokenizer.ggml.model is missing)");
    auto tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw Error(file.path() + ": no token list (tokenizer.ggml.tokens is missing)");
    v.tokens = std::move(*tokens);
    v.pre = file.get_string("tokenizer.ggml.pre").value_or(std::string());
    v.merges = file.get_string_array("tokenizer.ggml.merges").value_or(std::vector<std::string>());

    // llama.cpp's defaults for absent keys: scores 0, every token normal.
    v.scores = file.get_float_array("tokenizer.ggml.scores")
                   .value_or(std::vector<float>(v.tokens.size(), 0.0f));
    v.types = file.get_int_array("tokenizer.ggml.token_type")
                  .value_or(std::vector<std::int32_t>(
                      v.tokens.size(), static_cast<std::int32_t>(TokenType::normal)));

    // For SentencePiece llama.cpp assumes <unk> 0, <s> 1, </s> 2, BOS on and
    // the dummy prefix when the file does not say.
    const bool spm = v.model == "llama";
    v.bos = read_id(file, "bos_token_id", spm ? 1 : -1);
    v.eos = read_id(file, "eos_token_id", spm ? 2 : -1);
    v.unk = read_id(file, "unknown_token_id", spm ? 0 : -1);
    v.pad = read_id(file, "padding_token_id", -1);
    v.eot = read_id(file, "eot_token_id", -1);
    v.eom = read_id(file, "eom_token_id", -1);
    // llama.cpp adds BOS by default for SentencePiece and the Llama 3 family.
    const bool bos_by_default =
        spm || (v.model == "gpt2" && choose_pre_tokenizer(v.pre).add_bos_by_default);
    v.add_bos = file.get_bool("tokenizer.ggml.add_bos_token").value_or(bos_by_default);
    v.add_eos = file.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
    v.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
    return v;
}

} // namespace kvscope

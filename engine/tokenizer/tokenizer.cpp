#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/spm_tokenizer.h"
#include "engine/tokenizer/stream_decoder.h"

namespace kvscope {
namespace {

std::string size_mismatch(std::string_view what, std::size_t found, std::size_t tokens) {
    return "the vocabulary has " + std::to_string(tokens) + " tokens but " + std::string(what) +
           " has " + std::to_string(found) + " entries";
}

void check_sizes(const Vocabulary& v) {
    if (v.tokens.empty()) throw Error("the vocabulary has no tokens (tokenizer.ggml.tokens)");
    if (v.tokens.size() > static_cast<std::size_t>(INT32_MAX))
        throw Error("the vocabulary has " + std::to_string(v.tokens.size()) +
                    " tokens, more than 32-bit ids can number");
    if (v.scores.size() != v.tokens.size())
        throw Error(size_mismatch("tokenizer.ggml.scores", v.scores.size(), v.tokens.size()));
    if (v.types.size() != v.tokens.size())
        throw Error(size_mismatch("tokenizer.ggml.token_type", v.types.size(), v.tokens.size()));
}

void check_entries(const Vocabulary& v) {
    for (std::size_t i = 0; i < v.tokens.size(); ++i) {
        if (v.types[i] < 1 || v.types[i] > 6)
            throw Error("token " + std::to_string(i) + " '" + v.tokens[i] + "' has type " +
                        std::to_string(v.types[i]) +
                        "; expected 1..6 (normal, unknown, control, user-defined, unused, byte)");
        if (!std::isfinite(v.scores[i]))
            throw Error("token " + std::to_string(i) + " '" + v.tokens[i] +
                        "' has a score that is not a finite number");
    }
}

void check_special_id(std::string_view key, std::int32_t id, std::size_t n_tokens) {
    if (id < -1 || (id >= 0 && static_cast<std::size_t>(id) >= n_tokens))
        throw Error("tokenizer.ggml." + std::string(key) + " = " + std::to_string(id) +
                    " is out of range: the vocabulary has " + std::to_string(n_tokens) +
                    " tokens");
}

void check_special_ids(const Vocabulary& v) {
    check_special_id("bos_token_id", v.bos, v.tokens.size());
    check_special_id("eos_token_id", v.eos, v.tokens.size());
    check_special_id("unknown_token_id", v.unk, v.tokens.size());
    check_special_id("padding_token_id", v.pad, v.tokens.size());
    check_special_id("eot_token_id", v.eot, v.tokens.size());
    check_special_id("eom_token_id", v.eom, v.tokens.size());
    if (v.add_bos && v.bos < 0)
        throw Error("tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token");
    if (v.add_eos && v.eos < 0)
        throw Error("tokenizer.ggml.add_eos_token is set but the vocabulary has no EOS token");
}

std::unique_ptr<const TokenizerModel> make_model(const Vocabulary& v) {
    if (v.model == "llama") return std::make_unique<SpmTokenizer>(v);
    if (v.model == "gpt2") return std::make_unique<BpeTokenizer>(v);
    throw Error("unsupported tokenizer '" + v.model +
                "' (tokenizer.ggml.model); supported: llama (SentencePiece BPE), "
                "gpt2 (byte-level BPE)");
}

// The text of end-of-turn tokens (llama.cpp's special_eog_ids): chat turn
// ends, gpt-oss's harmony <|return|> and <|call|>, and Qwen's fill-in-the-
// middle pad/repo/file separators (which llama.cpp stops at too).
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>",      "<|eom_id|>", "<|im_end|>",  "<|end|>",       "<end_of_turn>",
    "<|endoftext|>",   "<|end_of_text|>", "<EOT>",  "_<EOT>",        "<|return|>",
    "<|call|>",        "<|fim_pad|>", "<|fim_repo|>", "<|repo_name|>", "<|file_sep|>",
};

// gpt-oss's harmony format marks channels and messages with control tokens
// that a chat parser must see in the decoded text; llama.cpp makes them
// user-defined (always parsed, always rendered), and <|end|>, which ends a
// message but not the answer, too when <|return|> and <|call|> exist.
constexpr std::string_view kHarmonyMarkers[] = {"<|channel|>", "<|message|>", "<|start|>",
                                                "<|constrain|>"};

std::int32_t find_token(const Vocabulary& v, std::string_view text) {
    const auto it = std::find(v.tokens.begin(), v.tokens.end(), text);
    return it == v.tokens.end() ? -1 : static_cast<std::int32_t>(it - v.tokens.begin());
}

// Returns the id of a harmony <|end|> that is no longer a stop token, or -1.
std::int32_t make_harmony_markers_user_defined(Vocabulary& v) {
    const auto user_defined = static_cast<std::int32_t>(TokenType::user_defined);
    for (const std::string_view text : kHarmonyMarkers)
        if (const std::int32_t id = find_token(v, text); id >= 0)
            v.types[static_cast<std::size_t>(id)] = user_defined;
    const std::int32_t end = find_token(v, "<|end|>");
    if (end < 0 || find_token(v, "<|return|>") < 0 || find_token(v, "<|call|>") < 0) return -1;
    v.types[static_cast<std::size_t>(end)] = user_defined;
    return end;
}

bool is_special(TokenType type) {
    return type == TokenType::control || type == TokenType::unknown ||
           type == TokenType::user_defined;
}

} // namespace

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)) {
    const bool spm = vocab_.model == "llama";
    if (vocab_.model == "gpt2" && vocab_.scores.empty()) vocab_.scores.assign(vocab_.tokens.size(), 0.0f);
    check_sizes(vocab_);
    check_entries(vocab_);
    check_special_ids(vocab_);
    const std::int32_t harmony_end = spm ? -1 : make_harmony_markers_user_defined(vocab_);
    model_ = make_model(vocab_);
    space_prefix_ = spm && vocab_.add_space_prefix;

    pieces_.reserve(vocab_.tokens.size());
    for (std::int32_t id = 0; id < n_tokens(); ++id) {
        pieces_.push_back(spm ? spm_token_bytes(vocab_, id) : gpt2_token_bytes(vocab_, id));
        if (is_special(token_type(id)) && !token_text(id).empty())
            specials_[static_cast<std::uint8_t>(token_text(id)[0])].push_back(id);
        const TokenType type = token_type(id);
        if ((type == TokenType::control || type == TokenType::user_defined) && id != harmony_end &&
            std::find(std::begin(kEndOfTurnTexts), std::end(kEndOfTurnTexts), token_text(id)) !=
                std::end(kEndOfTurnTexts))
            stop_tokens_.push_back(id);
    }
    // A harmony <|end|> stays out even where the metadata names it EOS, EOT
    // or EOM (llama.cpp drops it from its end-of-generation set last).
    for (const std::int32_t id : {vocab_.eos, vocab_.eot, vocab_.eom})
        if (id >= 0 && id != harmony_end) stop_tokens_.push_back(id);
    std::sort(stop_tokens_.begin(), stop_tokens_.end());
    stop_tokens_.erase(std::unique(stop_tokens_.begin(), stop_tokens_.end()), stop_tokens_.end());
    for (auto& bucket : specials_)
        std::stable_sort(bucket.begin(), bucket.end(), [this](std::int32_t a, std::int32_t b) {
            return token_text(a).size() > token_text(b).size();
        });
    logger("tokenizer")->debug("{} tokenizer: {} tokens, BOS {}, EOS {}, UNK {}, add BOS {}",
                               vocab_.model, n_tokens(), vocab_.bos, vocab_.eos, vocab_.unk,
                               vocab_.add_bos);
}

bool Tokenizer::is_stop_token(std::int32_t id) const {
    return std::binary_search(stop_tokens_.begin(), stop_tokens_.end(), id);
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
    std::vector<std::int32_t> ids;
    ids.reserve(text.size() / 3 + 2);
    if (options.add_special && vocab_.add_bos) ids.push_back(vocab_.bos);

    // llama.cpp counts the start of the text as following a special token:
    // both get the dummy-prefix space.
    bool after_special = !options.continues_text;
    std::size_t plain_start = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::int32_t special = match_special(text.substr(pos), options.parse_special);
        if (special < 0) {
            ++pos;
            continue;
        }
        encode_text(text.substr(plain_start, pos - plain_start), after_special, ids);
        ids.push_back(special);
        after_special = true;
        pos += token_text(special).size();
        plain_start = pos;
    }
    encode_text(text.substr(plain_start), after_special, ids);

    if (options.add_special && vocab_.add_eos) ids.push_back(vocab_.eos);
    return ids;
}

void Tokenizer::encode_text(std::string_view text, bool& after_special,
                            std::vector<std::int32_t>& out) const {
    if (text.empty()) return;
    model_->encode(text, after_special, out);
    after_special = false;
}

std::int32_t Tokenizer::match_special(std::string_view text, bool parse_special) const {
    for (const std::int32_t id : specials_[static_cast<std::uint8_t>(text[0])]) {
        const bool enabled = parse_special || token_type(id) == TokenType::user_defined;
        if (enabled && text.starts_with(token_text(id))) return id;
    }
    return -1;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, DecodeOptions options) const {
    StreamDecoder decoder(*this, options);
    std::string text;
    for (const std::int32_t id : ids) text += decoder.push(id);
    text += decoder.flush();
    return text;
}

std::size_t Tokenizer::checked_index(std::int32_t id) const {
    if (id < 0 || id >= n_tokens())
        throw Error("token id " + std::to_string(id) + " is out of range: the vocabulary has " +
                    std::to_string(n_tokens()) + " tokens");
    return static_cast<std::size_t>(id);
}

std::string_view Tokenizer::token_piece(std::int32_t id, bool render_special) const {
    const std::size_t i = checked_index(id);
    const TokenType type = token_type(id);
    if (render_special && (type == TokenType::control || type == TokenType::unknown))
        return vocab_.tokens[i];
    return pieces_[i];
}

const std::string& Tokenizer::token_text(std::int32_t id) const {
    return vocab_.tokens[checked_index(id)];
}

TokenType Tokenizer::token_type(std::int32_t id) const {
    return static_cast<TokenType>(vocab_.types[checked_index(id)]);
}

} // namespace kvscope

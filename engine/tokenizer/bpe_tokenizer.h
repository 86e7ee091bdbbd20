// engine/tokenizer: GPT-2-style byte-level BPE (tokenizer.ggml.model =
// "gpt2"), used by GPT-2, Llama 3, Qwen 2 and SmolLM, encoding as Hugging
// Face tokenizers, tiktoken and llama.cpp's llm_tokenizer_bpe do.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/piece_table.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer_model.h"
#include "engine/tokenizer/vocabulary.h"

namespace kvscope {

// GPT-2's byte-to-unicode map: bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF
// stand for themselves, the other 68 for U+0100, U+0101, ... in byte order
// (space is 'Ġ' U+0120, '\n' is 'Ċ' U+010A). Token and merge strings are
// stored in this form.
char32_t gpt2_byte_to_code_point(std::uint8_t byte);

// The bytes a token string in that form stands for, or nothing when it
// holds a character outside the map.
std::optional<std::string> gpt2_string_to_bytes(std::string_view text);

// The bytes a token adds to decoded text: a normal token's bytes (its text
// as it is when not in the byte-to-unicode form), a user-defined token's
// text, a <0xNN> byte token's byte; control, unknown and unused tokens
// nothing (llama.cpp's token_to_piece without `special`).
std::string gpt2_token_bytes(const Vocabulary& vocab, std::int32_t id);

// Encoding: the pre-tokenizer cuts the text into words; each word starts as
// its single bytes, and the adjacent pair whose merge ("left right" in
// tokenizer.ggml.merges) comes first in that list is merged (leftmost on
// ties) until no pair has a merge; the resulting strings are the tokens.
// Symbols are numbered (a token's id, or a number past the vocabulary for a
// string that only merges form), so merging compares integers; a merge is
// found by the pair of numbers in a hash table. A word that occurs again in
// the same text copies the ids of its first occurrence.
class BpeTokenizer final : public TokenizerModel {
public:
    // `vocab` must already pass Tokenizer's checks. Throws kvscope::Error
    // when it has no merges. An unknown tokenizer.ggml.pre logs a warning
    // and uses the GPT-2 pre-tokenizer.
    explicit BpeTokenizer(const Vocabulary& vocab);
    ~BpeTokenizer() override;

    void encode(std::string_view text, bool after_special,
                std::vector<std::int32_t>& out) const override;

    PreTokenizerKind pre_tokenizer() const { return pre_.kind; }

private:
    struct Workspace;
    class PairTable;

    static constexpr std::size_t kShortWord = 48;

    void encode_word(std::string_view word, Workspace& ws, std::vector<std::int32_t>& out) const;
    void encode_short_word(std::string_view word, std::vector<std::int32_t>& out) const;
    void emit_symbol(std::int32_t symbol, std::vector<std::int32_t>& out) const;

    PreTokenizerChoice pre_;
    std::int32_t n_tokens_ = 0;
    // Normal tokens by their bytes (whole-word lookup with ignore_merges).
    PieceTable tokens_;
    std::unique_ptr<PairTable> merges_;
    std::array<std::int32_t, 256> byte_symbols_{};
    // Symbols n_tokens_, n_tokens_ + 1, ...: strings that merges produce but
    // that are not tokens; they end up as the tokens of their single bytes.
    std::vector<std::string> extra_symbols_;
    std::int32_t unk_ = -1;
};

} // namespace kvscope

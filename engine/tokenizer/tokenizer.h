// engine/tokenizer: text <-> token ids for a model's vocabulary.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer_model.h"
#include "engine/tokenizer/vocabulary.h"

namespace kvscope {

struct EncodeOptions {
    // Add BOS / EOS where the vocabulary asks for them (add_bos / add_eos).
    bool add_special = true;
    // Turn exact strings of control and unknown tokens ("<s>") into their
    // ids. Off: they are plain text. User-defined tokens always match, as
    // in sentencepiece and llama.cpp.
    bool parse_special = false;
    // The text follows other text (a turn in the middle of a conversation):
    // its start gets no SentencePiece dummy-prefix space.
    bool continues_text = false;
};

struct DecodeOptions {
    // Encoding puts a space (the SentencePiece dummy prefix) in front of the
    // text. false: the first piece of text loses it, so that
    // decode(encode(text)) == text (sentencepiece's decode) for well-formed
    // UTF-8 text, with one exception: SentencePiece vocabularies write
    // spaces as U+2581 ("▁"), so a U+2581 in the text itself decodes as a
    // space, as in sentencepiece (byte-level BPE has no such exception;
    // ill-formed bytes decode as U+FFFD in both). true: every
    // piece is kept as it is (llama.cpp's token_to_piece), which is what a
    // continuation needs: " there" after "Once upon a time".
    bool keep_leading_space = false;
    // Write control and unknown tokens as their text ("<s>") instead of
    // nothing.
    bool render_special = false;
};

class Tokenizer {
public:
    // Checks the vocabulary (sizes agree, types known, scores finite, special
    // ids in range, byte tokens well formed) and throws kvscope::Error
    // naming what is wrong, or "unsupported tokenizer" for a model other
    // than "llama" (SentencePiece BPE) and "gpt2" (byte-level BPE). A "gpt2"
    // vocabulary may leave `scores` empty. As llama.cpp, it makes gpt-oss's
    // harmony markers <|channel|>, <|message|>, <|start|>, <|constrain|>
    // (and <|end|>, see stop_tokens) user-defined, so that they are always
    // parsed and always decoded as their text.
    explicit Tokenizer(Vocabulary vocab);

    std::vector<std::int32_t> encode(std::string_view text, EncodeOptions options = {}) const;

    // Always valid UTF-8: bytes that do not form characters become U+FFFD.
    // Throws kvscope::Error on an id outside the vocabulary.
    std::string decode(std::span<const std::int32_t> ids, DecodeOptions options = {}) const;

    // The bytes a token adds to decoded text (may be part of a character);
    // valid as long as the tokenizer. Throws on an id out of range.
    std::string_view token_piece(std::int32_t id, bool render_special = false) const;
    // The token as the vocabulary stores it ("▁Hello", "<0x0A>").
    const std::string& token_text(std::int32_t id) const;
    TokenType token_type(std::int32_t id) const;

    std::int32_t n_tokens() const { return static_cast<std::int32_t>(vocab_.tokens.size()); }
    const Vocabulary& vocabulary() const { return vocab_; }
    std::int32_t bos() const { return vocab_.bos; }
    std::int32_t eos() const { return vocab_.eos; }
    // Whether encoding put a dummy-prefix space in front of the text
    // (SentencePiece with add_space_prefix only).
    bool has_space_prefix() const { return space_prefix_; }

    // The ids that end a generated turn, sorted: EOS, EOT and EOM from the
    // metadata, and the control (or user-defined) tokens whose text is an
    // end-of-turn marker of a common chat format: <|eot_id|>, <|eom_id|>,
    // <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, <|end_of_text|>,
    // <EOT>, gpt-oss's <|return|> and <|call|>, Qwen's <|fim_pad|>,
    // <|repo_name|> and <|file_sep|> (llama.cpp's list). In a harmony
    // vocabulary (<|return|> and <|call|> exist) <|end|> ends a message, not
    // the turn, and is left out.
    const std::vector<std::int32_t>& stop_tokens() const { return stop_tokens_; }
    bool is_stop_token(std::int32_t id) const;

private:
    std::size_t checked_index(std::int32_t id) const;
    std::int32_t match_special(std::string_view text, bool parse_special) const;
    void encode_text(std::string_view text, bool& after_special,
                     std::vector<std::int32_t>& out) const;

    Vocabulary vocab_;
    std::unique_ptr<const TokenizerModel> model_;
    bool space_prefix_ = false;
    std::vector<std::int32_t> stop_tokens_;
    std::vector<std::string> pieces_; // token_piece without render_special
    // Control, unknown and user-defined tokens by their first byte, longest
    // first, so that the longest one matching at a position wins.
    std::array<std::vector<std::int32_t>, 256> specials_;
};

} // namespace kvscope

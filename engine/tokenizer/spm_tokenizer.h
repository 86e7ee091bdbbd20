// engine/tokenizer: SentencePiece BPE (tokenizer.ggml.model = "llama"),
// encoding exactly as sentencepiece and llama.cpp's llm_tokenizer_spm do.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/piece_table.h"
#include "engine/tokenizer/tokenizer_model.h"
#include "engine/tokenizer/vocabulary.h"

namespace kvscope {

// The byte of a "<0xNN>" piece, or nothing for any other text.
std::optional<std::uint8_t> parse_byte_piece(std::string_view piece);

// The bytes a token stands for in decoded text: "▁" becomes a space, a byte
// token its byte, a user-defined token its text, control, unknown and unused
// tokens nothing (as llama.cpp's token_to_piece without `special`).
std::string spm_token_bytes(const Vocabulary& vocab, std::int32_t id);

// Encodes with SentencePiece's algorithm: spaces become "▁", a "▁" goes in
// front (the dummy prefix), the text starts as single characters, and the
// adjacent pair whose concatenation is a token with the highest score is
// merged (leftmost on ties) until no pair is a token. Symbols that are no
// token fall back to their <0xNN> byte tokens, or to UNK without them.
// A heap of candidate pairs over a linked list of symbols keeps this
// O(n log n) in the text length.
class SpmTokenizer final : public TokenizerModel {
public:
    // `vocab` must already pass Tokenizer's checks; throws kvscope::Error
    // when its byte tokens are malformed or it cannot encode arbitrary text.
    explicit SpmTokenizer(const Vocabulary& vocab);

    void encode(std::string_view text, bool after_special,
                std::vector<std::int32_t>& out) const override;

private:
    struct Workspace;

    std::size_t next_segment_end(std::string_view text) const;
    void encode_segment(std::string_view text, Workspace& ws,
                        std::vector<std::int32_t>& out) const;
    void encode_segment_cached(std::string_view segment, Workspace& ws,
                               std::vector<std::int32_t>& out) const;
    void try_add_pair(std::string_view text, Workspace& ws, std::int32_t left,
                      std::int32_t right) const;
    void emit(std::string_view text, std::uint32_t start, std::uint32_t length,
              Workspace& ws, std::vector<std::int32_t>& out) const;
    void emit_unknown(std::string_view piece, Workspace& ws,
                      std::vector<std::int32_t>& out) const;

    // Pieces that may be formed from text: normal, user-defined and unused
    // (sentencepiece's rule; control, byte and unknown pieces never are).
    PieceTable pieces_;
    std::vector<float> scores_;
    std::vector<TokenType> types_;
    std::array<std::int32_t, 256> byte_ids_{};
    bool byte_fallback_ = false;
    std::int32_t unk_ = -1;
    bool add_space_prefix_ = true;
    // Where the text may be cut into segments (see next_segment_end).
    std::array<bool, 256> isolated_{};
    bool split_at_spaces_ = false;
};

} // namespace kvscope

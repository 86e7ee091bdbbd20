// engine/tokenizer: the part that differs between tokenizer families
// (SentencePiece BPE now, GPT-2 byte-level BPE later). Tokenizer does what
// they share: special tokens, BOS/EOS, decoding.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kvscope {

class TokenizerModel {
public:
    virtual ~TokenizerModel() = default;

    // Appends the ids of `text`, a non-empty run of plain text (special
    // tokens are already cut out). `after_special`: the run starts the input
    // or follows a special token.
    virtual void encode(std::string_view text, bool after_special,
                        std::vector<std::int32_t>& out) const = 0;
};

} // namespace kvscope

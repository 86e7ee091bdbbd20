// engine/tokenizer: the vocabulary a tokenizer is built from, as a plain
// struct (tests build one by hand; read_vocabulary fills it from a GGUF file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvscope {

class GgufFile;

// tokenizer.ggml.token_type values (SentencePiece's piece types).
enum class TokenType : std::int32_t {
    normal = 1,       // ordinary text piece, takes part in merges
    unknown = 2,      // <unk>
    control = 3,      // <s>, </s>: never produced from text unless parse_special
    user_defined = 4, // always matched as a whole string in the text
    unused = 5,       // may be merged, then split again into its parts
    byte = 6,         // <0xNN>: byte fallback
};

struct Vocabulary {
    // tokenizer.ggml.model: "llama" = SentencePiece BPE, "gpt2" = byte-level BPE
    std::string model;
    // tokenizer.ggml.pre: the pre-tokenizer of "gpt2" ("gpt-2", "llama-bpe",
    // "qwen2", "smollm", ...); empty when absent.
    std::string pre;
    // SentencePiece pieces with U+2581 for space ("llama"), or token bytes
    // in GPT-2's byte-to-unicode form ("gpt2"); special tokens as their text.
    std::vector<std::string> tokens;
    std::vector<float> scores;       // "llama": higher merges first
    std::vector<std::int32_t> types; // TokenType values
    // "gpt2": "left right" pairs, earlier ones merge first.
    std::vector<std::string> merges;
    std::int32_t bos = -1; // -1 = none
    std::int32_t eos = -1;
    std::int32_t unk = -1;
    std::int32_t pad = -1;
    std::int32_t eot = -1; // end of turn (tokenizer.ggml.eot_token_id)
    std::int32_t eom = -1; // end of message (tokenizer.ggml.eom_token_id)
    bool add_bos = false; // encode(..., add_special) puts BOS in front
    bool add_eos = false;
    bool add_space_prefix = true; // SentencePiece dummy prefix
};

// Reads the tokenizer.ggml.* keys. Missing optional keys get llama.cpp's
// defaults (for "llama": BOS 1, EOS 2, UNK 0, add BOS, space prefix; for
// other models no special ids, no space prefix, and add BOS only for the
// Llama 3 pre-tokenizer family ("llama-bpe", ...); scores 0 and type normal
// when those arrays are absent). Throws kvscope::Error when
// the model or token list is missing or an id does not fit in 32 bits.
Vocabulary read_vocabulary(const GgufFile& file);

} // namespace kvscope

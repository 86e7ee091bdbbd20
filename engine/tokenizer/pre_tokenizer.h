// engine/tokenizer: the pre-tokenizers of byte-level BPE vocabularies,
// selected by tokenizer.ggml.pre. They cut text into the words that BPE
// then merges within, exactly as the tokenizers' regular expressions do
// (as Hugging Face tokenizers and tiktoken run them), with hand-written
// scanners instead of a regex engine:
//
//   gpt2     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama3   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2    llama3 with \p{N} (single digits) instead of \p{N}{1,3}
//   qwen35   qwen2 with combining marks as letters: [\p{L}\p{M}]+ for \p{L}+,
//            and ?[^\s\p{L}\p{M}\p{N}]+ for the symbols
//   gpt4o    o200k (GPT-4o, gpt-oss, Phi-4-mini, Llama 4), with U =
//            [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and W = [\p{Ll}\p{Lm}\p{Lo}\p{M}]:
//            [^\r\n\p{L}\p{N}]?U*W+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//            [^\r\n\p{L}\p{N}]?U+W*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}|
//            ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   smollm   \p{N} first (every digit alone), then gpt2 on each part
//   falcon   [\p{P}\$\+<=>\^~\|`]+, then gpt2, then [0-9][0-9][0-9]
//   default  llama.cpp's fallback: [\p{P}\$\+<=>\^~\|]+, then gpt2, then
//            \p{N}+, then [0-9][0-9][0-9]
//
// llama.cpp runs gpt4o through std::regex with an ASCII stand-in for the
// cases ([^a-z] / [^A-Z] among letters) and without \p{M}, so by its
// pattern it cuts differently where a word has non-ASCII capitals inside
// ("приВет": one word there, "при" + "Вет" here and in tiktoken) or
// combining marks (Devanagari's vowel signs); this follows the original
// pattern, which the models were trained with. The contractions match
// ASCII letters in either case.
//
// A stage keeps the text between its matches as parts of their own, so the
// words always concatenate to the input. Ill-formed UTF-8 is one character
// per maximal subpart, of no class (like a symbol); its bytes are kept.
#pragma once

#include <string_view>
#include <vector>

namespace kvscope {

enum class PreTokenizerKind { default_, gpt2, llama3, qwen2, qwen35, gpt4o, smollm, falcon };

struct PreTokenizerChoice {
    PreTokenizerKind kind;
    bool ignore_merges = false; // a word that is a token as a whole is that token (Llama 3)
    bool known = true;          // false: `pre` was not recognized and gpt2 stands in
    // llama.cpp's add_bos when tokenizer.ggml.add_bos_token is absent: on
    // for the Llama 3 family, off for the others.
    bool add_bos_by_default = false;
};

// The pre-tokenizer for a tokenizer.ggml.pre value, with llama.cpp's names
// and aliases: "gpt-2"/"gpt2", "llama-bpe"/"llama3"/"llama-v3", "qwen2"
// (Qwen 2, 2.5 and 3), "qwen35", "gpt-4o" (and "llama4"), "smollm",
// "default", ... An empty `pre` (the key is absent) is "default", as in
// llama.cpp; an unknown one falls back to gpt2 with known = false.
PreTokenizerChoice choose_pre_tokenizer(std::string_view pre);

std::string_view to_string(PreTokenizerKind kind);

// Receives the words one by one, without a std::function's allocation.
class WordSink {
public:
    template <class F>
    WordSink(F& f) // NOLINT(google-explicit-constructor): a callable converts
        : object_(&f), call_([](void* o, std::string_view w) { (*static_cast<F*>(o))(w); }) {}
    void operator()(std::string_view word) const { call_(object_, word); }

private:
    void* object_;
    void (*call_)(void*, std::string_view);
};

// Hands the words of `text` (views into it), in order, to `sink`.
void pre_tokenize(PreTokenizerKind kind, std::string_view text, WordSink sink);

// The same, appended to `words`.
void pre_tokenize(PreTokenizerKind kind, std::string_view text,
                  std::vector<std::string_view>& words);

} // namespace kvscope

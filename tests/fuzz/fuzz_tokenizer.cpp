// Both tokenizer families on real vocabularies: Llama 2 (SentencePiece BPE),
// GPT-2 and Llama 3 (byte-level BPE), from the shared models folder. The
// first input byte picks the vocabulary and the options, the rest is the
// text. Promises checked: encoding any bytes gives ids in range; decoding
// gives well-formed UTF-8; and decode(encode(text)) == text for well-formed
// text, except that SentencePiece decodes a U+2581 in the text as a space
// (as sentencepiece does; tokenizer.h).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "engine/core/log.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "fuzz_support.h"

namespace {

using kvscope::fuzz::require;

constexpr std::array<const char*, 3> kVocabularies = {
    "llama2-spm-vocab.gguf", // SentencePiece BPE
    "gpt2-bpe-vocab.gguf",   // byte-level BPE, GPT-2 pre-tokenizer
    "llama3-bpe-vocab.gguf", // byte-level BPE, Llama 3 pre-tokenizer
};
std::array<std::unique_ptr<const kvscope::Tokenizer>, kVocabularies.size()> tokenizers;

bool well_formed(std::string_view text) {
    std::string out;
    kvscope::utf8::append_text(text, true, out);
    return out == text;
}

constexpr std::string_view kSentencePieceSpace = "\xE2\x96\x81"; // U+2581

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    kvscope::set_log_level("off");
    for (std::size_t i = 0; i < kVocabularies.size(); ++i) {
        const std::string path = kvscope::fuzz::models_dir() + "/tokenizers/" + kVocabularies[i];
        try {
            tokenizers[i] = std::make_unique<const kvscope::Tokenizer>(
                kvscope::read_vocabulary(kvscope::GgufFile(path)));
        } catch (const std::exception& e) {
            std::fprintf(stderr, "fuzz_tokenizer: skipped: %s (the shared models folder)\n", e.what());
            std::exit(kvscope::fuzz::kSkipped);
        }
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const kvscope::Tokenizer& tok = *tokenizers[data[0] % kVocabularies.size()];
    const kvscope::EncodeOptions options{.add_special = (data[0] & 0x10) != 0,
                                         .parse_special = (data[0] & 0x20) != 0};
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

    const std::vector<std::int32_t> ids = tok.encode(text, options);
    for (std::int32_t id : ids)
        require(id >= 0 && id < tok.n_tokens(), "encode gives ids in the vocabulary");
    const std::string decoded = tok.decode(ids);
    require(well_formed(decoded), "decode gives well-formed UTF-8");

    const bool spm_space = tok.vocabulary().model == "llama" && text.find(kSentencePieceSpace) != std::string::npos;
    if (!options.parse_special && well_formed(text) && !spm_space)
        require(decoded == text, "decode(encode(text)) == text");
    return 0;
}

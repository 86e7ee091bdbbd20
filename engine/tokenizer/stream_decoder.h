// engine/tokenizer: token ids -> text, one id at a time, for streaming
// generated tokens to a user.
#pragma once

#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace kvscope {

// Emits text only once its UTF-8 characters are complete: the bytes of one
// character may come from several byte tokens (<0xE4><0xBD><0xA0>). Bytes
// that cannot form a character become U+FFFD; nothing is ever dropped
// silently and no input makes it fail, except an id outside the vocabulary
// (kvscope::Error).
//
// By default every piece is kept as it is (llama.cpp's behaviour), so a
// continuation's first " there" keeps its space, and a stream that starts
// with BOS and "▁Once" gives " Once". llama2.c's run.c drops the space of a
// piece that follows BOS, so its printed text lacks that space; pass
// keep_leading_space = false to get that (and sentencepiece's decode).
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer,
                           DecodeOptions options = {.keep_leading_space = true});

    // The text that `id` completes; empty while a character is unfinished.
    std::string push(std::int32_t id);

    // Whatever is still pending (an unfinished character, as U+FFFD), then
    // starts over as if new.
    std::string flush();

private:
    const Tokenizer* tokenizer_;
    DecodeOptions options_;
    std::string pending_;   // bytes of an unfinished character
    bool at_start_ = true;  // no piece of text seen yet
};

} // namespace kvscope

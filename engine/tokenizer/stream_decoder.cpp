#include "engine/tokenizer/stream_decoder.h"

#include "engine/tokenizer/utf8.h"

namespace kvscope {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer), options_(options) {}

std::string StreamDecoder::push(std::int32_t id) {
    std::string_view piece = tokenizer_->token_piece(id, options_.render_special);
    if (piece.empty()) return {};
    // The dummy prefix is the first space of the first normal piece; byte,
    // control and user-defined tokens never carry it.
    if (at_start_ && !options_.keep_leading_space && tokenizer_->has_space_prefix() &&
        tokenizer_->token_type(id) == TokenType::normal && piece.front() == ' ')
        piece.remove_prefix(1);
    at_start_ = false;

    pending_ += piece;
    std::string text;
    pending_.erase(0, utf8::append_text(pending_, false, text));
    return text;
}

std::string StreamDecoder::flush() {
    std::string text;
    utf8::append_text(pending_, true, text);
    pending_.clear();
    at_start_ = true;
    return text;
}

} // namespace kvscope

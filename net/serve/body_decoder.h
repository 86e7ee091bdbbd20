// net/serve: a request body as it arrives, decoded (Content-Encoding gzip
// or deflate, inflated with zlib a piece at a time) and cut off at the
// body limit: a 1 MB gzip bomb costs the server the limit, never the
// gigabyte it would inflate to. Not thread-safe: one connection's reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope::serve {

class BodyDecoder {
public:
    enum class Result { Ok, TooLarge, Corrupt };

    // A decoder for a Content-Encoding value ("" or identity: none; gzip,
    // x-gzip; deflate: zlib-wrapped, or raw as some clients send it);
    // nullopt for any other coding. `limit`: the most decoded bytes kept.
    static std::optional<BodyDecoder> for_encoding(std::string_view encoding, std::size_t limit);
    BodyDecoder(BodyDecoder&&) noexcept;
    BodyDecoder& operator=(BodyDecoder&&) noexcept;
    ~BodyDecoder();

    // The body's declared length, if any: room for the decoded body is
    // reserved once (the limit when its size is not known: address space,
    // not memory, until bytes arrive), so it never grows by copies that
    // would hold it twice.
    void expect(std::optional<std::uint64_t> declared_length);
    // The next bytes of the body as sent. TooLarge once the decoded body
    // passes the limit (nothing past it is kept); Corrupt when the coding
    // is broken.
    Result put(std::string_view bytes);
    // The body ended: Corrupt when a coded stream is incomplete.
    Result finish();
    // The decoded body so far; take it once.
    std::string take() { return std::move(body_); }

private:
    struct Inflater;
    BodyDecoder(std::unique_ptr<Inflater> inflater, std::size_t limit);
    Result inflate(std::string_view bytes);

    std::unique_ptr<Inflater> inflater_; // null: identity
    std::size_t limit_;
    std::string body_;
};

} // namespace kvscope::serve

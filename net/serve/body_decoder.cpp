#include "net/serve/body_decoder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <zlib.h>

namespace kvscope::serve {
namespace {

// Inflated this many bytes at a time: the most a step adds past what is kept.
constexpr std::size_t kStep = 16 * 1024;

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace

struct BodyDecoder::Inflater {
    z_stream z{};
    bool deflate = false;    // "deflate": zlib-wrapped, or raw if the first bytes say so
    bool started = false;    // inflateInit2 ran
    bool ended = false;      // Z_STREAM_END seen
    std::string head;        // a deflate body's first bytes, until the wrapper is known

    ~Inflater() {
        if (started)
            inflateEnd(&z);
    }
    // gzip: windowBits 16+15; deflate: zlib (15) or raw (-15), told apart
    // by RFC 1950's header check (CMF*256+FLG a multiple of 31, method 8).
    bool start(std::string_view first) {
        int bits = 16 + MAX_WBITS;
        if (deflate) {
            const auto cmf = static_cast<unsigned char>(first[0]), flg = static_cast<unsigned char>(first[1]);
            bits = (cmf & 0x0F) == 8 && (cmf * 256 + flg) % 31 == 0 ? MAX_WBITS : -MAX_WBITS;
        }
        started = inflateInit2(&z, bits) == Z_OK;
        return started;
    }
};

std::optional<BodyDecoder> BodyDecoder::for_encoding(std::string_view encoding, std::size_t limit) {
    encoding = trimmed(encoding);
    if (encoding.empty() || iequals(encoding, "identity"))
        return BodyDecoder(nullptr, limit);
    const bool gzip = iequals(encoding, "gzip") || iequals(encoding, "x-gzip");
    if (!gzip && !iequals(encoding, "deflate"))
        return std::nullopt;
    auto inflater = std::make_unique<Inflater>();
    inflater->deflate = !gzip;
    return BodyDecoder(std::move(inflater), limit);
}

BodyDecoder::BodyDecoder(std::unique_ptr<Inflater> inflater, std::size_t limit)
    : inflater_(std::move(inflater)), limit_(limit) {}
BodyDecoder::BodyDecoder(BodyDecoder&&) noexcept = default;
BodyDecoder& BodyDecoder::operator=(BodyDecoder&&) noexcept = default;
BodyDecoder::~BodyDecoder() = default;

void BodyDecoder::expect(std::optional<std::uint64_t> declared_length) {
    const bool known = !inflater_ && declared_length;
    body_.reserve(known ? std::min<std::size_t>(*declared_length, limit_) : limit_);
}

BodyDecoder::Result BodyDecoder::put(std::string_view bytes) {
    if (!inflater_) {
        if (body_.size() + bytes.size() > limit_)
            return Result::TooLarge;
        body_.append(bytes);
        return Result::Ok;
    }
    Inflater& in = *inflater_;
    if (!in.started) {
        in.head.append(bytes);
        if (in.head.size() < 2)
            return Result::Ok;
        if (!in.start(in.head))
            return Result::Corrupt;
        return inflate(std::exchange(in.head, {}));
    }
    return inflate(bytes);
}

BodyDecoder::Result BodyDecoder::inflate(std::string_view bytes) {
    Inflater& in = *inflater_;
    if (in.ended)
        return bytes.empty() ? Result::Ok : Result::Corrupt; // bytes past the stream's end
    in.z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    in.z.avail_in = static_cast<uInt>(bytes.size());
    std::array<char, kStep> out;
    while (in.z.avail_in > 0 && !in.ended) {
        in.z.next_out = reinterpret_cast<Bytef*>(out.data());
        in.z.avail_out = static_cast<uInt>(out.size());
        const int rc = ::inflate(&in.z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
            return Result::Corrupt;
        const std::size_t produced = out.size() - in.z.avail_out;
        if (body_.size() + produced > limit_)
            return Result::TooLarge;
        body_.append(out.data(), produced);
        in.ended = rc == Z_STREAM_END;
        if (rc == Z_BUF_ERROR && produced == 0)
            break; // needs more input
    }
    return in.z.avail_in > 0 && in.ended ? Result::Corrupt : Result::Ok;
}

BodyDecoder::Result BodyDecoder::finish() {
    if (!inflater_)
        return Result::Ok;
    if (!inflater_->started) // fewer than two bytes, or none
        return inflater_->head.empty() ? Result::Ok : Result::Corrupt;
    return inflater_->ended ? Result::Ok : Result::Corrupt;
}

} // namespace kvscope::serve

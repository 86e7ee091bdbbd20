// tests/net/serve: a gzip bomb for the server's hostile-input tests
// (test_hostile_http in-process, test_cli_serve_memory against a child
// serve): `inflated` zero bytes, gzip-compressed (about 1,000:1). Link zlib.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

#include <zlib.h>

namespace kvscope::test {

inline std::string gzip_of_zeros(std::size_t inflated) {
    z_stream z{};
    deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
    const std::string zeros(1 << 20, '\0');
    std::string out;
    char buf[65536];
    for (std::size_t left = inflated; left > 0 || z.avail_in > 0;) {
        if (z.avail_in == 0) {
            const std::size_t n = std::min(left, zeros.size());
            z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
            z.avail_in = static_cast<uInt>(n);
            left -= n;
        }
        do {
            z.next_out = reinterpret_cast<Bytef*>(buf);
            z.avail_out = sizeof buf;
            deflate(&z, left == 0 ? Z_FINISH : Z_NO_FLUSH);
            out.append(buf, sizeof buf - z.avail_out);
        } while (z.avail_out == 0);
    }
    deflateEnd(&z);
    return out;
}

} // namespace kvscope::test

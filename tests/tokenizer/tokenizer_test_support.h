// tests/tokenizer: readable QCOMPARE failures for ids and byte strings.
#pragma once

#include <QtTest>

#include <cstdint>
#include <string>
#include <vector>

using Ids = std::vector<std::int32_t>;

namespace QTest {

template <>
inline char* toString(const Ids& ids) {
    QByteArray text = "[";
    for (std::size_t i = 0; i < ids.size(); ++i)
        text += (i ? ", " : "") + QByteArray::number(ids[i]);
    return qstrdup(text + "]");
}

// Quoted, with bytes outside printable ASCII as \xNN.
template <>
inline char* toString(const std::string& s) {
    QByteArray text = "\"";
    for (const char c : s) {
        const auto b = static_cast<unsigned char>(c);
        text += b >= 0x20 && b < 0x7F ? QByteArray(1, c)
                                      : "\\x" + QByteArray::number(b, 16).rightJustified(2, '0');
    }
    return qstrdup(text + "\"");
}

} // namespace QTest

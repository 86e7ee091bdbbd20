// tests/tokenizer: reading the reference files of ../shared/models.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_models.h"
#include "tokenizer_test_support.h"

namespace kvscope::test {

inline Tokenizer load_tokenizer(const QString& path) {
    const GgufFile file(path.toStdString());
    return Tokenizer(read_vocabulary(file));
}

inline std::vector<QJsonObject> read_jsonl(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    std::vector<QJsonObject> rows;
    for (const QByteArray& line : file.readAll().split('\n'))
        if (!line.trimmed().isEmpty()) rows.push_back(QJsonDocument::fromJson(line).object());
    return rows;
}

inline std::string utf8(const QJsonValue& value) { return value.toString().toStdString(); }

inline Ids ids_of(const QJsonValue& value) {
    Ids ids;
    for (const QJsonValue& id : value.toArray()) ids.push_back(id.toInt());
    return ids;
}

inline bool is_valid_utf8(const std::string& s) {
    const QByteArray bytes(s.data(), static_cast<qsizetype>(s.size()));
    return QString::fromUtf8(bytes).toUtf8() == bytes;
}

// A code point from a mix of scripts, digits, emoji, combining marks,
// apostrophes and whitespace of every kind the pre-tokenizers treat apart.
inline char32_t random_code_point(std::mt19937& rng) {
    static const std::vector<std::pair<char32_t, char32_t>> ranges = {
        {0x20, 0x7E},     {0x20, 0x20},     {0x09, 0x0A},       {0x0D, 0x0D},     {'\'', '\''},
        {'0', '9'},       {0xA0, 0xFF},     {0x0300, 0x036F},   {0x0391, 0x03C9}, {0x0410, 0x044F},
        {0x0600, 0x06FF}, {0x0900, 0x097F}, {0x3040, 0x30FF},   {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3},
        {0x2000, 0x206F}, {0x3000, 0x3000}, {0x1F300, 0x1F6FF}, {0x1D400, 0x1D7FF},
        {0xE000, 0xE0FF}, {0x10FF00, 0x10FFFF}, {0x00B2, 0x00B3}, {0x0660, 0x0669}};
    const auto& [lo, hi] = ranges[rng() % ranges.size()];
    return static_cast<char32_t>(lo + rng() % (hi - lo + 1));
}

// Random text of fewer than `max_chars` code points from those ranges
// (never U+2581, which SentencePiece cannot tell from a space).
inline std::string random_text(std::mt19937& rng, int max_chars = 48) {
    std::u32string text(rng() % static_cast<unsigned>(max_chars), U' ');
    for (char32_t& c : text) c = random_code_point(rng);
    return QString::fromUcs4(text.data(), static_cast<qsizetype>(text.size())).toStdString();
}

inline std::string random_bytes(std::mt19937& rng, int max_bytes = 40) {
    std::string bytes(rng() % static_cast<unsigned>(max_bytes), '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 0x80 : rng());
    return bytes;
}

} // namespace kvscope::test

// KVSCOPE_REQUIRE_MODEL for a name computed at run time.
#define KVSCOPE_REQUIRE_MODEL_NAMED(var, name)                                       \
    const QString var = kvscope::test::test_model_path(name);                        \
    if (var.isEmpty())                                                               \
        QSKIP(qPrintable(QStringLiteral("shared models folder %1 is absent")         \
                             .arg(kvscope::test::test_models_dir())))

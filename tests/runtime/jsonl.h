// Reads the reference .jsonl files of ../shared/models.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>

#include <optional>
#include <vector>

#include "engine/kv/kv_ids.h"
#include "engine/runtime/generation.h"

namespace kvscope::test {

inline QList<QJsonObject> read_jsonl(const QString& path) {
    QList<QJsonObject> rows;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return rows;
    while (!f.atEnd()) {
        const QByteArray line = f.readLine().trimmed();
        if (!line.isEmpty())
            rows.append(QJsonDocument::fromJson(line).object());
    }
    return rows;
}

inline std::vector<TokenId> ids(const QJsonValue& v) {
    std::vector<TokenId> out;
    for (const QJsonValue& x : v.toArray())
        out.push_back(static_cast<TokenId>(x.toInt()));
    return out;
}

// Greedy generation of every row of a reference file (prompt_token_ids in,
// generated_token_ids expected) with `options`, max_new_tokens set per row.
// Returns the prompt of the first row that differs (prompts may be empty),
// or nothing when every row matches.
inline std::optional<QString> first_reference_mismatch(const Model& model, const QList<QJsonObject>& rows,
                                        GenerateOptions options) {
    for (const QJsonObject& row : rows) {
        const auto expected = ids(row["generated_token_ids"]);
        options.max_new_tokens = static_cast<std::uint32_t>(expected.size());
        if (generate(model, ids(row["prompt_token_ids"]), options).tokens != expected)
            return row["prompt"].toString();
    }
    return std::nullopt;
}

} // namespace kvscope::test

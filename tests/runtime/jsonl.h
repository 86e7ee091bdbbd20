// Reads the reference .jsonl files of ../shared/models.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>

#include <vector>

#include "engine/kv/kv_ids.h"

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

} // namespace kvscope::test

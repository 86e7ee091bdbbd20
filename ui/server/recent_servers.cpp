#include "ui/server/recent_servers.h"

#include <QSettings>
#include <QVariantMap>

namespace kvscope::ui {
namespace {

const QString kKey = QStringLiteral("recentServers");

QVariantMap toVariant(const ConnectText& t) {
    return {{QStringLiteral("url"), t.url},
            {QStringLiteral("kind"), t.kind},
            {QStringLiteral("kvEvents"), t.kvEvents},
            {QStringLiteral("kvReplay"), t.kvReplay},
            {QStringLiteral("kvTopic"), t.kvTopic},
            {QStringLiteral("kvDtype"), t.kvDtype},
            {QStringLiteral("kvUnified"), t.kvUnified}};
}

ConnectText fromVariant(const QVariantMap& m) {
    const auto text = [&m](const char* key) { return m.value(QString::fromLatin1(key)).toString(); };
    return {text("url"), QString(), text("kind"), text("kvEvents"), text("kvReplay"), text("kvTopic"), text("kvDtype"),
            text("kvUnified")};
}

} // namespace

std::vector<ConnectText> RecentServers::list() {
    std::vector<ConnectText> servers;
    for (const QVariant& entry : QSettings().value(kKey).toList())
        if (const ConnectText t = fromVariant(entry.toMap()); !t.url.isEmpty())
            servers.push_back(t);
    return servers;
}

void RecentServers::add(const ConnectText& text) {
    QVariantList entries{toVariant(text)};
    for (const ConnectText& old : list())
        if (old.url != text.url && entries.size() < kMaximum)
            entries << toVariant(old);
    QSettings().setValue(kKey, entries);
}

QString RecentServers::label(const ConnectText& text) {
    QStringList details;
    if (!text.kind.isEmpty() && text.kind != QLatin1String("auto"))
        details << text.kind;
    if (const qsizetype n = text.kvEvents.split(QLatin1Char(','), Qt::SkipEmptyParts).size())
        details << QStringLiteral("%1 KV-event endpoint%2").arg(n).arg(n == 1 ? "" : "s");
    return details.isEmpty() ? text.url : QStringLiteral("%1 (%2)").arg(text.url, details.join(QStringLiteral(", ")));
}

} // namespace kvscope::ui

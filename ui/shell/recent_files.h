#pragma once

#include <QString>
#include <QStringList>

namespace kvscope::ui {

// The models opened lately, newest first, kept in QSettings.
class RecentFiles {
public:
    static constexpr int kMaximum = 8;

    static QStringList list();
    static void add(const QString& path);
    static void remove(const QString& path);
};

} // namespace kvscope::ui

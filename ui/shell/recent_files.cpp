#include "ui/shell/recent_files.h"

#include <QFileInfo>
#include <QSettings>

namespace kvscope::ui {
namespace {

const QString kKey = QStringLiteral("recentFiles");

} // namespace

QStringList RecentFiles::list() { return QSettings().value(kKey).toStringList(); }

void RecentFiles::add(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    QStringList files = list();
    files.removeAll(absolute);
    files.prepend(absolute);
    while (files.size() > kMaximum)
        files.removeLast();
    QSettings().setValue(kKey, files);
}

void RecentFiles::remove(const QString& path) {
    QStringList files = list();
    files.removeAll(QFileInfo(path).absoluteFilePath());
    QSettings().setValue(kKey, files);
}

} // namespace kvscope::ui

// tests/support: helpers shared by the Qt Test executables (no engine logic).
#pragma once

#include <QByteArray>
#include <QDir>
#include <QString>
#include <QtGlobal>

namespace kvscope::test {

// Folder of the shared reference models: $KVSCOPE_TEST_MODELS, else the
// ../shared/models folder beside the source tree that CMake recorded.
inline QString test_models_dir() {
    const QByteArray env = qgetenv("KVSCOPE_TEST_MODELS");
    return QDir::cleanPath(env.isEmpty() ? QStringLiteral(KVSCOPE_DEFAULT_TEST_MODELS)
                                         : QString::fromLocal8Bit(env));
}

// Absolute path of a file in the models folder, or an empty string when the
// folder is absent (the caller then QSKIPs).
inline QString test_model_path(const QString& name) {
    const QDir dir(test_models_dir());
    return dir.exists() ? dir.filePath(name) : QString();
}

} // namespace kvscope::test

// QSKIP unless the shared models folder exists; yields the file's path.
#define KVSCOPE_REQUIRE_MODEL(var, name)                                             \
    const QString var = kvscope::test::test_model_path(QStringLiteral(name));        \
    if (var.isEmpty())                                                               \
        QSKIP(qPrintable(QStringLiteral("shared models folder %1 is absent")         \
                             .arg(kvscope::test::test_models_dir())))

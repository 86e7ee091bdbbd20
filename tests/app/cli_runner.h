// Runs kvscope-cli as a user would and captures what it prints.
#pragma once

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStringList>

namespace kvscope::test {

struct CliResult {
    int exit_code = -1;
    QByteArray out;
    QByteArray err;
    QJsonObject json() const { return QJsonDocument::fromJson(out).object(); }
};

inline CliResult run_cli(const QStringList& args, int timeout_ms = 120000) {
    QProcess p;
    p.start(QStringLiteral(KVSCOPE_CLI), args);
    p.waitForFinished(timeout_ms);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

} // namespace kvscope::test

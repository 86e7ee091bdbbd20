// tests/app: the server processes `kvscope-cli top`'s tests watch, started
// as a user starts them and found by the URL they print.
#pragma once

#include <QProcess>
#include <QRegularExpression>
#include <QStringList>

#include <string>

#include <nlohmann/json.hpp>

namespace kvscope::test {

// A process whose stdout, within its first lines, names the URL it serves;
// terminated (then killed) when the test is done with it.
class UrlProcess {
public:
    UrlProcess() = default;
    UrlProcess(const UrlProcess&) = delete;
    UrlProcess& operator=(const UrlProcess&) = delete;
    ~UrlProcess() {
        if (process_.state() == QProcess::NotRunning)
            return;
        process_.terminate();
        if (!process_.waitForFinished(15000))
            process_.kill();
        process_.waitForFinished();
    }

    // True once a line of its stdout gave an http://HOST:PORT URL and
    // `lines` lines are in (the URL's and those after it).
    bool start(const QString& program, const QStringList& args, int lines = 1) {
        process_.setStandardErrorFile(QProcess::nullDevice());
        process_.start(program, args);
        while (lines_.size() < lines || url_.isEmpty()) {
            if (!process_.canReadLine() && !process_.waitForReadyRead(60000))
                return false;
            while (process_.canReadLine()) {
                const QString line = QString::fromUtf8(process_.readLine()).trimmed();
                const auto m = QRegularExpression("http://[0-9.]+:[0-9]+").match(line);
                if (url_.isEmpty() && m.hasMatch())
                    url_ = m.captured();
                if (!url_.isEmpty())
                    lines_ << line;
            }
        }
        return true;
    }

    const QString& url() const { return url_; }
    const QStringList& lines() const { return lines_; }
    QProcess& process() { return process_; }

private:
    QProcess process_;
    QString url_;
    QStringList lines_;
};

inline nlohmann::json json_of(const QByteArray& text) {
    return nlohmann::json::parse(text.constData(), text.constData() + text.size(), nullptr, false);
}

} // namespace kvscope::test

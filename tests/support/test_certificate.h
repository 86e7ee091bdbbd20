// tests/support: a TLS certificate for loopback servers, made at test time
// by the openssl command (Debian's openssl package): a self-signed P-256
// certificate for 127.0.0.1 and localhost, valid two days. Clients trust it
// by naming the certificate file as their CA file.
#pragma once

#include <QDir>
#include <QProcess>
#include <QString>

namespace kvscope::test {

struct TestCertificate {
    QString cert; // PEM certificate: the server's, and the clients' CA file
    QString key;  // PEM private key
};

// Writes cert.pem and key.pem into `dir`; empty paths when openssl fails
// (its output is then in `error`).
inline TestCertificate make_test_certificate(const QString& dir, QString* error = nullptr) {
    const QDir d(dir);
    const TestCertificate files{d.filePath(QStringLiteral("cert.pem")), d.filePath(QStringLiteral("key.pem"))};
    QProcess openssl;
    openssl.setProcessChannelMode(QProcess::MergedChannels);
    openssl.start(QStringLiteral("openssl"),
                  {QStringLiteral("req"), QStringLiteral("-x509"), QStringLiteral("-newkey"), QStringLiteral("ec"),
                   QStringLiteral("-pkeyopt"), QStringLiteral("ec_paramgen_curve:P-256"), QStringLiteral("-nodes"),
                   QStringLiteral("-days"), QStringLiteral("2"), QStringLiteral("-subj"), QStringLiteral("/CN=127.0.0.1"),
                   QStringLiteral("-addext"), QStringLiteral("subjectAltName=IP:127.0.0.1,DNS:localhost"),
                   QStringLiteral("-keyout"), files.key, QStringLiteral("-out"), files.cert});
    const bool ok = openssl.waitForFinished(30000) && openssl.exitStatus() == QProcess::NormalExit &&
                    openssl.exitCode() == 0;
    if (!ok) {
        if (error)
            *error = QString::fromLocal8Bit(openssl.readAll()) + openssl.errorString();
        return {};
    }
    return files;
}

} // namespace kvscope::test

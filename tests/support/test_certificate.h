// tests/support: a TLS certificate for loopback servers, made at test time
// with OpenSSL's libcrypto in the test's own process: a self-signed P-256
// certificate for 127.0.0.1 and localhost, valid two days, a CA of its own
// (as `openssl req -x509` makes one). Clients trust it by naming the
// certificate file as their CA file.
//
// In-process rather than by running the openssl command: a test that forks
// a child (QProcess) aborts under ThreadSanitizer (its fork handler's CHECK
// on Qt's clone), and these tests are in the TSan set (label threaded).
// Link OpenSSL::Crypto.
#pragma once

#include <cstdio>
#include <memory>

#include <QDir>
#include <QFile>
#include <QString>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace kvscope::test {

struct TestCertificate {
    QString cert; // PEM certificate: the server's, and the clients' CA file
    QString key;  // PEM private key
};

namespace certificate_detail {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

inline bool add_extension(X509* cert, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (!ext)
        return false;
    const bool added = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return added;
}

// The certificate of `key`, signed by it.
inline Cert self_signed(EVP_PKEY* key) {
    Cert cert(X509_new(), &X509_free);
    X509* c = cert.get();
    constexpr long kTwoDays = 2L * 24 * 60 * 60;
    X509_NAME* name = X509_get_subject_name(c);
    const bool ok = c && X509_set_version(c, 2) == 1 && ASN1_INTEGER_set(X509_get_serialNumber(c), 1) == 1 &&
                    X509_gmtime_adj(X509_getm_notBefore(c), 0) && X509_gmtime_adj(X509_getm_notAfter(c), kTwoDays) &&
                    X509_set_pubkey(c, key) == 1 &&
                    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0) == 1 &&
                    X509_set_issuer_name(c, name) == 1 &&
                    add_extension(c, NID_basic_constraints, "critical,CA:TRUE") &&
                    add_extension(c, NID_subject_key_identifier, "hash") &&
                    add_extension(c, NID_authority_key_identifier, "keyid:always") &&
                    add_extension(c, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost") &&
                    X509_sign(c, key, EVP_sha256()) > 0;
    return ok ? std::move(cert) : Cert(nullptr, &X509_free);
}

inline bool write_pem(const QString& path, auto&& write) {
    FILE* f = std::fopen(QFile::encodeName(path).constData(), "wb");
    if (!f)
        return false;
    const bool ok = write(f) == 1;
    return std::fclose(f) == 0 && ok;
}

} // namespace certificate_detail

// Writes cert.pem and key.pem into `dir`; empty paths when OpenSSL fails
// (its reason is then in `error`).
inline TestCertificate make_test_certificate(const QString& dir, QString* error = nullptr) {
    using namespace certificate_detail;
    const QDir d(dir);
    const TestCertificate files{d.filePath(QStringLiteral("cert.pem")), d.filePath(QStringLiteral("key.pem"))};
    const Key key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
    const Cert cert = key ? self_signed(key.get()) : Cert(nullptr, &X509_free);
    const bool ok = cert &&
                    write_pem(files.key,
                              [&](FILE* f) {
                                  return PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
                              }) &&
                    write_pem(files.cert, [&](FILE* f) { return PEM_write_X509(f, cert.get()); });
    if (!ok) {
        if (error) {
            char reason[256] = "cannot write the PEM files";
            if (const unsigned long e = ERR_get_error())
                ERR_error_string_n(e, reason, sizeof reason);
            *error = QStringLiteral("test certificate in %1: %2").arg(dir, QString::fromLatin1(reason));
        }
        return {};
    }
    return files;
}

} // namespace kvscope::test

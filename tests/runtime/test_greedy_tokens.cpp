// Greedy generations against the tokens an x86-64 build wrote
// (tests/data/greedy_tokens.jsonl): whatever SIMD path and architecture
// runs this, stories260K (f32, f16, Q8_0, Q4_0) and tiny-kq (real Q4_K,
// Q6_K blocks) must generate the same tokens. The arm64 preset runs it
// under qemu once per NEON path (KVSCOPE_SIMD); on x86 it guards the
// recorded tokens against a kernel change that moves them.
//
// Recording (on x86-64, after a change that legitimately moves tokens):
//   KVSCOPE_RECORD_GREEDY_TOKENS=tests/data/greedy_tokens.jsonl build/tests/runtime/test_greedy_tokens
#include <QtTest>

#include "engine/runtime/model.h"
#include "jsonl.h"
#include "kernels/cpu/simd_path.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::test;

class TestGreedyTokens : public QObject {
    Q_OBJECT
private slots:
    void matches_recorded_tokens_data();
    void matches_recorded_tokens();
    void cleanupTestCase();
};

namespace {

constexpr std::uint32_t kNewTokens = 32;

// Each model with the prompts of its reference file (the first three of
// stories260K's run.c prompts; tiny-kq's one llama.cpp prompt).
struct Case {
    const char* model;
    const char* prompts; // a .jsonl of ../shared/models with prompt_token_ids
    int rows;
};
constexpr Case kCases[] = {
    {"stories260K-f32.gguf", "stories260K.reference.jsonl", 3},
    {"stories260K-f16.gguf", "stories260K.reference.jsonl", 3},
    {"stories260K-q8_0.gguf", "stories260K.reference.jsonl", 3},
    {"stories260K-q4_0.gguf", "stories260K.reference.jsonl", 3},
    {"tiny-kq-q4_k_m.gguf", "tiny-kq.llamacpp.jsonl", 1},
    {"tiny-kq-q6_k.gguf", "tiny-kq.llamacpp.jsonl", 1},
};

QString recorded_path() { return QStringLiteral(KVSCOPE_TEST_DATA "/greedy_tokens.jsonl"); }

QByteArray record_target() { return qgetenv("KVSCOPE_RECORD_GREEDY_TOKENS"); }

// The recorded tokens of (model, prompt), or empty.
std::vector<TokenId> recorded(const QString& model, const std::vector<TokenId>& prompt) {
    for (const QJsonObject& row : read_jsonl(recorded_path()))
        if (row["model"].toString() == model && ids(row["prompt_token_ids"]) == prompt)
            return ids(row["tokens"]);
    return {};
}

QList<QJsonObject> g_recording;

} // namespace

void TestGreedyTokens::matches_recorded_tokens_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("prompts");
    QTest::addColumn<int>("rows");
    for (const Case& c : kCases)
        QTest::newRow(c.model) << c.model << c.prompts << c.rows;
}

void TestGreedyTokens::matches_recorded_tokens() {
    QFETCH(QString, model);
    QFETCH(QString, prompts);
    QFETCH(int, rows);
    const QString model_path = test_model_path(model);
    if (model_path.isEmpty() || !QFile::exists(model_path))
        QSKIP(qPrintable(QStringLiteral("%1 is not in the shared models folder").arg(model)));
    const auto loaded = std::make_shared<const Model>(model_path.toStdString());
    const QList<QJsonObject> prompt_rows = read_jsonl(test_model_path(prompts)).mid(0, rows);
    QCOMPARE(prompt_rows.size(), rows);
    const char* path = to_string(kernels::cpu::simd_path());
    for (const QJsonObject& row : prompt_rows) {
        const std::vector<TokenId> prompt = ids(row["prompt_token_ids"]);
        const std::vector<TokenId> ours = generate_alone(loaded, prompt, kNewTokens);
        if (!record_target().isEmpty()) {
            QJsonObject out{{"model", model}, {"simd", path}};
            out["prompt_token_ids"] = row["prompt_token_ids"];
            QJsonArray tokens;
            for (const TokenId t : ours)
                tokens.append(static_cast<int>(t));
            out["tokens"] = tokens;
            g_recording.append(out);
            continue;
        }
        const std::vector<TokenId> expected = recorded(model, prompt);
        QVERIFY2(!expected.empty(), qPrintable(QStringLiteral("no recorded tokens for %1 (record them: see this file)")
                                                   .arg(model)));
        QVERIFY2(ours == expected, qPrintable(QStringLiteral("%1 on the %2 path generates other tokens than the "
                                                             "x86-64 recording")
                                                  .arg(model, QString::fromLatin1(path))));
    }
}

void TestGreedyTokens::cleanupTestCase() {
    if (record_target().isEmpty())
        return;
    QFile f(QString::fromLocal8Bit(record_target()));
    QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(f.fileName()));
    for (const QJsonObject& row : g_recording)
        f.write(QJsonDocument(row).toJson(QJsonDocument::Compact) + '\n');
    qInfo("recorded %lld generations in %s", static_cast<long long>(g_recording.size()), qPrintable(f.fileName()));
}

QTEST_APPLESS_MAIN(TestGreedyTokens)
#include "test_greedy_tokens.moc"

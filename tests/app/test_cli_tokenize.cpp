// kvscope-cli tokenize, chat and bench tokenizer, run as processes: the
// reference tokenizations of ../shared/models/tokenizers through --text -
// and standard input, JSON keys, BOS rules, --parse-special, a piped chat
// with a model that has no chat template, and the benchmark's JSON.
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>

#include "cli_runner.h"
#include "support/test_models.h"

using kvscope::test::CliResult;
using kvscope::test::run_cli;

namespace {

// run_cli with `input` written to the process's standard input.
CliResult run_cli_stdin(const QStringList& args, const QByteArray& input, int timeout_ms = 120000) {
    QProcess p;
    p.start(QStringLiteral(KVSCOPE_CLI), args);
    p.waitForStarted();
    p.write(input);
    p.closeWriteChannel();
    p.waitForFinished(timeout_ms);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

QList<int> ints(const QJsonValue& array) {
    QList<int> out;
    for (const QJsonValue& v : array.toArray()) out.push_back(v.toInt());
    return out;
}

std::vector<QJsonObject> reference_rows(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) qFatal("cannot open %s", qPrintable(path));
    std::vector<QJsonObject> rows;
    for (const QByteArray& line : file.readAll().split('\n'))
        if (!line.trimmed().isEmpty()) rows.push_back(QJsonDocument::fromJson(line).object());
    return rows;
}

} // namespace

class TestCliTokenize : public QObject {
    Q_OBJECT
private slots:
    void reference_ids_from_stdin_data();
    void reference_ids_from_stdin();
    void text_argument_and_final_newline();
    void json_keys_and_pieces();
    void bos_rules();
    void parse_special();
    void text_output();
    void errors();
    void chat_without_template_is_plain_completion();
    void chat_at_the_context_edge();
    void chat_ends_cleanly_on_empty_input();
    void bench_tokenizer_json();
};

void TestCliTokenize::reference_ids_from_stdin_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("llama2-spm") << "llama2-spm-vocab";
    QTest::newRow("gpt2-bpe") << "gpt2-bpe-vocab";
    QTest::newRow("llama3-bpe") << "llama3-bpe-vocab";
}

void TestCliTokenize::reference_ids_from_stdin() {
    // Every reference text, byte for byte through standard input, with the
    // file's own BOS rule: exactly the reference ids.
    QFETCH(QString, name);
    const QString vocab = kvscope::test::test_model_path("tokenizers/" + name + ".gguf");
    if (vocab.isEmpty()) QSKIP("shared models folder is absent");
    int matched = 0;
    for (const QJsonObject& row : reference_rows(kvscope::test::test_model_path("tokenizers/" + name +
                                                                                ".reference.jsonl"))) {
        const QByteArray text = row["text"].toString().toUtf8();
        const CliResult r = run_cli_stdin({"tokenize", "--model", vocab, "--text", "-", "--json"}, text);
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject j = r.json();
        QCOMPARE(ints(j["ids"]), ints(row["ids"]));
        QCOMPARE(j["add_bos"].toBool(), row["add_bos"].toBool());
        ++matched;
    }
    QCOMPARE(matched, 33);
}

void TestCliTokenize::text_argument_and_final_newline() {
    const QString gpt2 = kvscope::test::test_model_path("tokenizers/gpt2-bpe-vocab.gguf");
    if (gpt2.isEmpty()) QSKIP("shared models folder is absent");
    CliResult r = run_cli({"tokenize", "--model", gpt2, "--text", "Hello world", "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{15496, 995}));
    // From stdin the final newline is part of the text (GPT-2's "\n" is 198).
    r = run_cli_stdin({"tokenize", "--model", gpt2, "--text", "-", "--json"}, "Hello world\n");
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{15496, 995, 198}));
    QCOMPARE(r.json()["text_bytes"].toInt(), 12);
}

void TestCliTokenize::json_keys_and_pieces() {
    const QString gpt2 = kvscope::test::test_model_path("tokenizers/gpt2-bpe-vocab.gguf");
    if (gpt2.isEmpty()) QSKIP("shared models folder is absent");
    const CliResult r = run_cli({"tokenize", "--model", gpt2, "--text", "Hello world", "--json"});
    QCOMPARE(r.exit_code, 0);
    const QJsonObject j = r.json();
    for (const char* key : {"ids", "pieces", "n_tokens", "tokenizer", "add_bos"})
        QVERIFY2(j.contains(key), key);
    const QJsonArray pieces = j["pieces"].toArray();
    QCOMPARE(pieces.size(), j["ids"].toArray().size());
    QCOMPARE(pieces[0].toString(), QStringLiteral("Hello"));
    QCOMPARE(pieces[1].toString(), QString::fromUtf8("\xC4\xA0world")); // Ġworld
    QCOMPARE(j["tokenizer"].toString(), QStringLiteral("gpt2"));
    QCOMPARE(j["pre_tokenizer"].toString(), QStringLiteral("gpt2"));
}

void TestCliTokenize::bos_rules() {
    const QString llama2 = kvscope::test::test_model_path("tokenizers/llama2-spm-vocab.gguf");
    const QString llama3 = kvscope::test::test_model_path("tokenizers/llama3-bpe-vocab.gguf");
    if (llama2.isEmpty()) QSKIP("shared models folder is absent");
    // Llama 2 asks for BOS (add_bos_token = true): [1, ▁Hello].
    CliResult r = run_cli({"tokenize", "--model", llama2, "--text", "Hello", "--json"});
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{1, 15043}));
    QCOMPARE(r.json()["pieces"].toArray()[0].toString(), QStringLiteral("<s>"));
    r = run_cli({"tokenize", "--model", llama2, "--text", "Hello", "--json", "--no-bos"});
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{15043}));
    QVERIFY(!r.json()["add_bos"].toBool());
    // The cl100k file says add_bos_token = false, over llama-bpe's default.
    r = run_cli({"tokenize", "--model", llama3, "--text", "Hello", "--json"});
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{9906}));
}

void TestCliTokenize::parse_special() {
    const QString gpt2 = kvscope::test::test_model_path("tokenizers/gpt2-bpe-vocab.gguf");
    const QString llama2 = kvscope::test::test_model_path("tokenizers/llama2-spm-vocab.gguf");
    if (gpt2.isEmpty()) QSKIP("shared models folder is absent");
    CliResult r = run_cli({"tokenize", "--model", gpt2, "--text", "<|endoftext|>", "--json"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY(ints(r.json()["ids"]).size() > 1);
    QVERIFY(!ints(r.json()["ids"]).contains(50256));
    r = run_cli({"tokenize", "--model", gpt2, "--text", "<|endoftext|>", "--json", "--parse-special"});
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{50256}));
    // SentencePiece: </s> becomes EOS only when asked.
    r = run_cli({"tokenize", "--model", llama2, "--text", "</s>", "--json", "--no-bos", "--parse-special"});
    QCOMPARE(ints(r.json()["ids"]), (QList<int>{2}));
    r = run_cli({"tokenize", "--model", llama2, "--text", "</s>", "--json", "--no-bos"});
    QVERIFY(!ints(r.json()["ids"]).contains(2));
}

void TestCliTokenize::text_output() {
    const QString gpt2 = kvscope::test::test_model_path("tokenizers/gpt2-bpe-vocab.gguf");
    if (gpt2.isEmpty()) QSKIP("shared models folder is absent");
    const CliResult r = run_cli({"tokenize", "--model", gpt2, "--text", "Hi\tthere\n"});
    QCOMPARE(r.exit_code, 0);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 4); // Hi, \t, there, \n
    QVERIFY2(lines[0].trimmed().startsWith("17250"), r.out.constData());
    QVERIFY2(r.out.contains("'Hi'"), r.out.constData());
    QVERIFY2(r.err.contains("4 tokens"), r.err.constData());
}

void TestCliTokenize::errors() {
    const QString gpt2 = kvscope::test::test_model_path("tokenizers/gpt2-bpe-vocab.gguf");
    if (gpt2.isEmpty()) QSKIP("shared models folder is absent");
    CliResult r = run_cli({"tokenize", "--model", gpt2});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--text"), r.err.constData());
    r = run_cli({"tokenize", "--model", "/nonexistent/vocab.gguf", "--text", "x"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY(r.err.contains("nonexistent"));
    r = run_cli({"tokenize", "--model", gpt2, "--text", "x", "--bogus"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY(r.err.contains("--bogus"));
}

void TestCliTokenize::chat_without_template_is_plain_completion() {
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    const CliResult r = run_cli_stdin({"--log-level", "warn", "chat", "--model", model, "-n", "12", "--threads", "1"},
                                      "Once upon a time\n\nThe little dog\n");
    QVERIFY2(r.exit_code == 0, r.err.constData());
    QVERIFY2(r.err.contains("plain completion"), r.err.constData());
    QVERIFY2(r.err.contains("chat template: none"), r.err.constData());
    // Two user lines (the empty one is skipped), two replies of 12 tokens.
    QCOMPARE(r.err.count("generated at"), 2);
    const QList<QByteArray> replies = r.out.split('\n');
    QCOMPARE(replies.size(), 3); // two lines and what follows the last newline
    QVERIFY(!replies[0].trimmed().isEmpty());
    QVERIFY(!replies[1].trimmed().isEmpty());
    // The second turn's prompt holds the whole conversation.
    const QList<QByteArray> stats = r.err.split('\n');
    qsizetype first = -1;
    qsizetype second = -1;
    for (const QByteArray& line : stats) {
        if (!line.contains("prompt tokens")) continue;
        const qsizetype n = line.mid(1, line.indexOf(' ') - 1).toLongLong();
        (first < 0 ? first : second) = n;
    }
    QVERIFY2(second > first + 12, r.err.constData());
}

void TestCliTokenize::chat_at_the_context_edge() {
    // stories260K's context is 512 tokens. A short line and a 500-token
    // reply; a line of about 300 tokens (the first exchange goes, the reply
    // gets the room left); one of about 960 (refused, the chat goes on); a
    // short one (the long exchange goes).
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    QByteArray input = "Once upon a time\n";
    input += QByteArray("Lily and Tom went to the park. ").repeated(25) + "\n";
    input += QByteArray("Lily and Tom went to the park. ").repeated(80) + "\n";
    input += "The cat\n";
    const CliResult r = run_cli_stdin({"--log-level", "warn", "chat", "--model", model, "-n", "500", "--threads", "2"},
                                      input);
    QVERIFY2(r.exit_code == 0, r.err.constData());
    QCOMPARE(r.err.count("generated at"), 3);
    QCOMPARE(r.err.count("[The conversation outgrew the model's context: its oldest 2 messages were left out (the "
                         "system prompt stays).]"),
             2);
    const qsizetype limited = r.err.indexOf("[The reply was limited to ");
    QVERIFY2(limited >= 0, r.err.constData());
    QVERIFY2(r.err.indexOf(" tokens: all the room the context had left.]", limited) > limited, r.err.constData());
    QVERIFY2(r.err.contains("leaves no room for a reply"), r.err.constData());
    QVERIFY2(r.err.contains("and the context holds 512 tokens"), r.err.constData());
    // The limited reply filled the context: its prompt and reply make 512.
    const qsizetype from = limited + qsizetype(sizeof("[The reply was limited to ") - 1);
    const int limit = r.err.mid(from, r.err.indexOf(' ', from) - from).toInt();
    QVERIFY(limit > 0 && limit < 500);
    bool found = false;
    for (const QByteArray& line : r.err.split('\n')) {
        const QList<QByteArray> words = line.mid(1).split(' '); // "[P prompt tokens, N generated at ..."
        if (line.contains("prompt tokens") && words.size() > 3 && words[3].toInt() == limit)
            found = words[0].toInt() + limit == 512;
    }
    QVERIFY2(found, r.err.constData());
}

void TestCliTokenize::chat_ends_cleanly_on_empty_input() {
    KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
    const CliResult r = run_cli_stdin({"chat", "--model", model, "--system", "Be kind."}, "");
    QCOMPARE(r.exit_code, 0);
    QVERIFY(r.out.isEmpty());
}

void TestCliTokenize::bench_tokenizer_json() {
    const QString gpt2 = kvscope::test::test_model_path("tokenizers/gpt2-bpe-vocab.gguf");
    if (gpt2.isEmpty()) QSKIP("shared models folder is absent");
    const QTemporaryDir dir;
    const QString text_path = dir.filePath("text.txt");
    QFile text(text_path);
    QVERIFY(text.open(QIODevice::WriteOnly));
    for (int i = 0; i < 200; ++i) text.write("The quick brown fox jumps over the lazy dog. ");
    text.close();
    const CliResult r = run_cli({"bench", "tokenizer", "--model", gpt2, "--text-file", text_path, "--json"});
    QVERIFY2(r.exit_code == 0, r.err.constData());
    const QJsonObject j = r.json();
    QCOMPARE(j["text_bytes"].toInt(), 200 * 45);
    // 10 tokens a sentence ("The"/" The" ... " dog", "."), and the final " ".
    QCOMPARE(j["tokens"].toInt(), 200 * 10 + 1);
    QVERIFY(j["mb_per_s"].toDouble() > 0);
    QVERIFY(j["tokens_per_s"].toDouble() > 0);
    QVERIFY(j.contains("seconds_per_100k_tokens"));
}

QTEST_GUILESS_MAIN(TestCliTokenize)
#include "test_cli_tokenize.moc"

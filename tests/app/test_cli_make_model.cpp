// kvscope-cli make-model, run as a user runs it: the file it writes is read
// back by kvscope-cli info. Needs no reference models. The smallest preset,
// llama-15m: what is checked does not depend on a model's size (and a
// cut gpt-oss-20b for the mixture-of-experts options).
#include <QtTest>

#include <QFile>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include "cli_runner.h"

using kvscope::test::run_cli;

class TestCliMakeModel : public QObject {
    Q_OBJECT
private slots:
    void make_model_writes_what_info_reads();
    void chat_template_option_gives_the_model_a_template();
    void missing_chat_template_file_is_an_error();
    void cut_options_make_a_smaller_model_of_the_same_kinds();
    void cut_options_out_of_range_are_errors();
    void mixtures_of_experts_cut_and_in_mxfp4();
};

namespace {

// Hugging Face's canonical ChatML template.
const char* const kChatMl =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The chat template `kvscope-cli chat` finds in `model`: its first stderr
// line, "[chat template: FAMILY ...]". No input, so it chats no turn.
QByteArray chat_template_of(const QString& model) {
    QProcess p;
    p.start(QStringLiteral(KVSCOPE_CLI), {"--log-level", "warn", "chat", "--model", model});
    p.closeWriteChannel();
    p.waitForFinished(120000);
    return p.readAllStandardError();
}

} // namespace

void TestCliMakeModel::make_model_writes_what_info_reads() {
    QTemporaryDir dir;
    const QString file = dir.filePath("tiny.gguf");
    auto r = run_cli({"make-model", "--preset", "llama-15m", "--type", "q4_0", "-o", file});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("random weights"), r.out.constData());
    r = run_cli({"--log-level", "warn", "info", file, "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.json()["layers"].toInt(), 6);
    QCOMPARE(r.json()["embedding_dim"].toInt(), 288);
    QCOMPARE(r.json()["vocab_size"].toInt(), 32000);
    QVERIFY(r.json()["name"].toString().contains("random weights"));
    r = run_cli({"make-model", "--preset", "llama-15m", "--type", "q6_k", "-o", file});
    QCOMPARE(r.exit_code, 1);
}

void TestCliMakeModel::chat_template_option_gives_the_model_a_template() {
    QTemporaryDir dir;
    const QString templ = dir.filePath("chatml.jinja");
    QFile f(templ);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kChatMl);
    f.close();
    const QString plain = dir.filePath("plain.gguf"), chat = dir.filePath("chat.gguf");
    QCOMPARE(run_cli({"make-model", "--preset", "llama-15m", "--type", "q4_0", "-o", plain}).exit_code, 0);
    QCOMPARE(run_cli({"make-model", "--preset", "llama-15m", "--type", "q4_0", "--chat-template", templ, "-o", chat})
                 .exit_code,
             0);
    const QByteArray without = chat_template_of(plain), with = chat_template_of(chat);
    QVERIFY2(without.contains("[chat template: none"), without.constData());
    QVERIFY2(with.contains("[chat template: chatml"), with.constData());
}

void TestCliMakeModel::missing_chat_template_file_is_an_error() {
    QTemporaryDir dir;
    const QString model = dir.filePath("m.gguf");
    const auto r = run_cli({"make-model", "--preset", "llama-15m", "--chat-template", dir.filePath("absent.jinja"),
                            "-o", model});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--chat-template") && r.err.contains("absent.jinja"), r.err.constData());
    QVERIFY(!QFile::exists(model));
}

// gemma3-270m cut to its first 6 layers (five window layers, then a
// global one), a 512-token vocabulary, a 64-token window and a 64-wide FFN:
// what info reads back is the cut shape, and the name says it is one.
void TestCliMakeModel::cut_options_make_a_smaller_model_of_the_same_kinds() {
    QTemporaryDir dir;
    const QString file = dir.filePath("g.gguf");
    auto r = run_cli({"make-model", "--preset", "gemma3-270m", "--layers", "6", "--vocab", "512", "--window", "64",
                      "--ffn", "64", "--type", "q8_0", "-o", file});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("gemma3-270m, 6 of 18 layers, vocabulary 512, window 64, FFN 64"), r.out.constData());
    r = run_cli({"--log-level", "warn", "info", file, "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.json()["architecture"].toString(), QString("gemma3"));
    QCOMPARE(r.json()["layers"].toInt(), 6);
    QCOMPARE(r.json()["vocab_size"].toInt(), 512);
    QCOMPARE(r.json()["ffn_dim"].toInt(), 64);
    QCOMPARE(r.json()["head_dim"].toInt(), 256);
    QCOMPARE(r.json()["kv_heads"].toInt(), 1);
    QVERIFY(r.json()["name"].toString().contains("6 of 18 layers"));
}

void TestCliMakeModel::cut_options_out_of_range_are_errors() {
    QTemporaryDir dir;
    const QString file = dir.filePath("m.gguf");
    const QStringList base{"make-model", "--preset", "qwen3-0.6b", "-o", file};
    auto r = run_cli(base + QStringList{"--layers", "29"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--layers must be in 1..28"), r.err.constData());
    r = run_cli(base + QStringList{"--window", "64"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("no sliding-window layers"), r.err.constData());
    r = run_cli(base + QStringList{"--ffn", "100"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("multiple of 32"), r.err.constData());
    r = run_cli(base + QStringList{"--vocab", "10"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--vocab must be in 260..151936"), r.err.constData());
    QVERIFY(!QFile::exists(file));
}

// gpt-oss-20b cut to one layer of 4 experts (as many as a token uses) in
// --type mxfp4, gpt-oss's own layout: its experts MXFP4, every other
// matrix Q8_0, the router and the vectors F32. And the options' refusals.
void TestCliMakeModel::mixtures_of_experts_cut_and_in_mxfp4() {
    QTemporaryDir dir;
    const QString file = dir.filePath("g.gguf");
    const QStringList cut{"make-model", "--preset", "gpt-oss-20b", "--layers", "1", "--vocab", "300", "--ffn", "64",
                          "-o", file};
    auto r = run_cli(cut + QStringList{"--experts", "4", "--type", "mxfp4"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("gpt-oss-20b, 1 of 24 layers, vocabulary 300, FFN 64, 4 of 32 experts") &&
                 r.out.contains("MXFP4 experts, Q8_0 otherwise"),
             r.out.constData());
    r = run_cli({"--log-level", "warn", "info", file, "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.json()["architecture"].toString(), QString("gpt-oss"));
    const QJsonObject types = r.json()["tensor_types"].toObject();
    QCOMPARE(types["MXFP4"].toObject()["tensors"].toInt(), 3); // gate, up and down of the layer's experts
    QCOMPARE(types["Q8_0"].toObject()["tensors"].toInt(), 6);  // token_embd, Q, K, V, O, output
    QVERIFY(types.contains("F32"));                            // norms, biases, sinks and the router

    r = run_cli(cut + QStringList{"--experts", "3"});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--experts must be in 4..32"), r.err.constData());
    r = run_cli({"make-model", "--preset", "llama-15m", "--type", "mxfp4", "-o", file});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("has no experts"), r.err.constData());
    r = run_cli({"make-model", "--preset", "llama-15m", "--experts", "4", "-o", file});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("--experts: llama-15m has no experts"), r.err.constData());
}

QTEST_GUILESS_MAIN(TestCliMakeModel)
#include "test_cli_make_model.moc"

// kvscope-cli make-model, run as a user runs it: the file it writes is read
// back by kvscope-cli info. Needs no reference models. The smallest preset,
// llama-15m: what is checked does not depend on a model's size.
#include <QtTest>

#include <QFile>
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

QTEST_GUILESS_MAIN(TestCliMakeModel)
#include "test_cli_make_model.moc"

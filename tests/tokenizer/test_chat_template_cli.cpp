// Synthetic models chat through real chat templates, end to end as a user
// runs it: kvscope-cli make-model --chat-template writes a template of
// tests/data/chat_templates into a model, and kvscope-cli chat runs two
// turns (a system prompt, a second turn after the model's reply) through
// it. A one-layer llama-42m: what is checked does not depend on the model.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

class TestChatTemplateCli : public QObject {
    Q_OBJECT
private slots:
    void synthetic_models_chat_through_their_templates_data();
    void synthetic_models_chat_through_their_templates();
};

namespace {

struct Run {
    int exit_code = -1;
    QByteArray err;
};

Run run_cli(const QStringList& args, const QByteArray& input = {}) {
    QProcess p;
    p.start(QStringLiteral(KVSCOPE_CLI), args);
    p.write(input);
    p.closeWriteChannel();
    p.waitForFinished(120000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardError()};
}

} // namespace

void TestChatTemplateCli::synthetic_models_chat_through_their_templates_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("description");
    QTest::newRow("Llama 3.2") << "meta-llama-Llama-3.2-3B-Instruct.jinja" << "llama3, the model's Jinja template";
    QTest::newRow("Qwen3") << "Qwen-Qwen3-0.6B.jinja" << "chatml, the model's Jinja template";
    QTest::newRow("Gemma 3") << "google-gemma-3-1b-it.jinja"
                             << "gemma, the model's Jinja template, content as text parts";
    QTest::newRow("gpt-oss") << "openai-gpt-oss-120b.jinja" << "the model's Jinja template";
}

void TestChatTemplateCli::synthetic_models_chat_through_their_templates() {
    QFETCH(QString, file);
    QFETCH(QString, description);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString model = dir.filePath("chat.gguf");
    const Run made = run_cli({"make-model", "--preset", "llama-42m", "--layers", "1", "--type", "q8_0",
                              "--chat-template", QStringLiteral(KVSCOPE_CHAT_TEMPLATES "/") + file, "-o", model});
    QVERIFY2(made.exit_code == 0, made.err.constData());
    const Run chat = run_cli({"--log-level", "warn", "chat", "--model", model, "--system", "Be brief.", "-n", "4"},
                             "Hello!\nAnd again?\n");
    QVERIFY2(chat.exit_code == 0, chat.err.constData());
    QVERIFY2(chat.err.contains("[chat template: " + description.toUtf8() + "]"), chat.err.constData());
    QVERIFY2(!chat.err.contains("notice"), chat.err.constData());
    QVERIFY2(chat.err.count(" prompt tokens, ") == 2, chat.err.constData()); // both turns ran
}

QTEST_GUILESS_MAIN(TestChatTemplateCli)
#include "test_chat_template_cli.moc"

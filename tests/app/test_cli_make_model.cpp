// kvscope-cli make-model, run as a user runs it: the file it writes is read
// back by kvscope-cli info. Needs no reference models.
#include <QtTest>

#include <QTemporaryDir>

#include "cli_runner.h"

using kvscope::test::run_cli;

class TestCliMakeModel : public QObject {
    Q_OBJECT
private slots:
    void make_model_writes_what_info_reads();
};

void TestCliMakeModel::make_model_writes_what_info_reads() {
    QTemporaryDir dir;
    const QString file = dir.filePath("tiny.gguf");
    auto r = run_cli({"make-model", "--preset", "llama-110m", "--type", "q4_0", "-o", file});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("random weights"), r.out.constData());
    r = run_cli({"--log-level", "warn", "info", file, "--json"});
    QCOMPARE(r.exit_code, 0);
    QCOMPARE(r.json()["layers"].toInt(), 12);
    QCOMPARE(r.json()["embedding_dim"].toInt(), 768);
    QCOMPARE(r.json()["vocab_size"].toInt(), 32000);
    QVERIFY(r.json()["name"].toString().contains("random weights"));
    r = run_cli({"make-model", "--preset", "llama-110m", "--type", "q6_k", "-o", file});
    QCOMPARE(r.exit_code, 1);
}

QTEST_GUILESS_MAIN(TestCliMakeModel)
#include "test_cli_make_model.moc"

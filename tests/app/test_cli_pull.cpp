// kvscope-cli pull, models and -hf / --model hf:// as a user runs them,
// against the fake hub on loopback (tests/net/hub/fake_hub.h) with the
// cache in a temporary folder (LLAMA_CACHE): the file lands where
// llama.cpp's -hf looks, `models` finds it and one placed there by hand, a
// cached model runs with no hub reachable, and the progress line shows on
// a terminal (the `script` command gives the run one).
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "net/hub/fake_hub.h"
#include "support/test_models.h"

using kvscope::test::CliResult;
using kvscope::test::FakeHub;
using kvscope::test::FakeHubRepo;
namespace fs = std::filesystem;

namespace {

const std::string kRepo = "kvscope-test/stories260K-GGUF";
const std::string kCommit = "89abcdef0123456789abcdef0123456789abcdef";

std::string read_bytes(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// llama.cpp's -hf path for a file (common/hf-cache.cpp; the hub cache of
// huggingface.co/docs/hub/local-cache): CACHE/models--ORG--NAME/snapshots/COMMIT/FILE.
fs::path llamacpp_path(const QString& cache, const std::string& org, const std::string& name,
                       const std::string& commit, const std::string& file) {
    return fs::path(cache.toStdString()) / ("models--" + org + "--" + name) / "snapshots" / commit / file;
}

} // namespace

class TestCliPull : public QObject {
    Q_OBJECT

    QTemporaryDir temp_;
    std::unique_ptr<FakeHub> hub_;
    std::string q8_;

    QString cache() const { return temp_.filePath(QStringLiteral("cache")); }

    // kvscope-cli with the hub at `endpoint` and the cache in `cache_dir`,
    // nothing else of the user's hub settings.
    CliResult run(const QStringList& args, const std::string& endpoint, const QString& cache_dir) const {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char* v : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "HF_TOKEN", "MODEL_ENDPOINT"})
            env.remove(QString::fromLatin1(v));
        env.insert(QStringLiteral("LLAMA_CACHE"), cache_dir);
        env.insert(QStringLiteral("HF_ENDPOINT"), QString::fromStdString(endpoint));
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(KVSCOPE_CLI), args);
        p.waitForFinished(120000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                p.readAllStandardError()};
    }

private slots:
    void initTestCase() {
        KVSCOPE_REQUIRE_MODEL(q8, "stories260K-q8_0.gguf");
        q8_ = read_bytes(q8.toStdString());
        const std::string q4 = read_bytes(kvscope::test::test_model_path("stories260K-q4_0.gguf").toStdString());
        hub_ = std::make_unique<FakeHub>(std::vector<FakeHubRepo>{
            {kRepo, kCommit, {{"stories260K-Q8_0.gguf", q8_, true}, {"stories260K-Q4_0.gguf", q4, true}}, false}});
    }

    void pull_puts_the_file_where_llamacpp_looks() {
        const CliResult r = run({"pull", QString::fromStdString(kRepo + ":Q8_0")}, hub_->endpoint(), cache());
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const fs::path expected =
            llamacpp_path(cache(), "kvscope-test", "stories260K-GGUF", kCommit, "stories260K-Q8_0.gguf");
        QCOMPARE(r.out.trimmed().toStdString(), expected.string());
        QVERIFY(read_bytes(expected) == q8_);
    }

    void missing_quant_and_bad_names_are_errors() {
        CliResult r = run({"pull", QString::fromStdString(kRepo + ":Q5_K_M")}, hub_->endpoint(), cache());
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("the quantizations there are: Q4_0, Q8_0"), r.err.constData());
        r = run({"pull", "no-slash"}, hub_->endpoint(), cache());
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("ORG/NAME"), r.err.constData());
    }

    void models_lists_what_was_pulled() {
        const CliResult r = run({"models", "--json"}, hub_->endpoint(), cache());
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonArray models = r.json()["models"].toArray();
        QCOMPARE(models.size(), 1);
        const QJsonObject m = models[0].toObject();
        QCOMPARE(m["repo"].toString().toStdString(), kRepo);
        QCOMPARE(m["quant"].toString(), QStringLiteral("Q8_0"));
        QCOMPARE(m["architecture"].toString(), QStringLiteral("llama"));
        QVERIFY(m["runnable"].toBool());
        QCOMPARE(m["bytes"].toInteger(), static_cast<qint64>(q8_.size()));
    }

    void cached_model_runs_with_no_hub_reachable() {
        const std::string nowhere = "http://127.0.0.1:1/";
        CliResult r = run({"generate", "-hf", QString::fromStdString(kRepo + ":Q8_0"), "--prompt", "Once upon a time",
                           "-n", "4", "--json"},
                          nowhere, cache());
        QVERIFY2(r.exit_code == 0, r.err.constData());
        r = run({"info", QString::fromStdString("hf://" + kRepo + ":Q8_0"), "--json"}, nowhere, cache());
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QCOMPARE(r.json()["architecture"].toString(), QStringLiteral("llama"));
        r = run({"generate", "--model", QString::fromStdString("hf://" + kRepo + ":Q4_0"), "--prompt", "Once", "-n",
                 "2"},
                nowhere, cache());
        QCOMPARE(r.exit_code, 1); // not cached, and the hub does not answer
        QVERIFY2(r.err.contains("cannot reach"), r.err.constData());
    }

    void model_not_cached_is_pulled_first() {
        const CliResult r = run({"generate", "--model", QString::fromStdString("hf://" + kRepo + ":Q4_0"), "--prompt",
                                 "Once", "-n", "2"},
                                hub_->endpoint(), cache());
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY(
            fs::exists(llamacpp_path(cache(), "kvscope-test", "stories260K-GGUF", kCommit, "stories260K-Q4_0.gguf")));
    }

    void a_file_placed_by_hand_is_found() {
        const QString hand = temp_.filePath(QStringLiteral("by-hand"));
        const std::string commit(40, 'd');
        const fs::path file = llamacpp_path(hand, "someone", "tiny-GGUF", commit, "tiny-Q8_0.gguf");
        fs::create_directories(file.parent_path());
        std::ofstream(file, std::ios::binary) << q8_;
        const fs::path broken = llamacpp_path(hand, "someone", "tiny-GGUF", commit, "broken-F16.gguf");
        std::ofstream(broken, std::ios::binary) << "not a gguf";
        fs::create_directories(fs::path(hand.toStdString()) / "models--someone--tiny-GGUF" / "refs");
        std::ofstream(fs::path(hand.toStdString()) / "models--someone--tiny-GGUF" / "refs" / "main") << commit;
        const CliResult r = run({"models"}, "http://127.0.0.1:1/", hand);
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(r.out.contains("2 models in"), r.out.constData());
        QVERIFY2(r.out.contains("someone/tiny-GGUF:Q8_0"), r.out.constData());
        QVERIFY2(r.out.contains(QByteArray::fromStdString(file.string())), r.out.constData());
        QVERIFY2(r.out.contains(" yes"), r.out.constData());
        QVERIFY2(r.out.contains("someone/tiny-GGUF:F16") && r.out.contains("no: "), r.out.constData());
    }

    void progress_line_on_a_terminal() {
        // script(1) runs the command on a pseudo-terminal and copies what it writes.
        const QString command =
            QStringLiteral("'%1' pull '%2'").arg(QStringLiteral(KVSCOPE_CLI), QString::fromStdString(kRepo + ":Q4_0"));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("LLAMA_CACHE"), temp_.filePath(QStringLiteral("tty-cache")));
        env.insert(QStringLiteral("HF_ENDPOINT"), QString::fromStdString(hub_->endpoint()));
        QProcess p;
        p.setProcessEnvironment(env);
        p.start(QStringLiteral("script"), {QStringLiteral("-qec"), command, QStringLiteral("/dev/null")});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        const QByteArray shown = p.readAllStandardOutput();
        QVERIFY2(shown.contains("stories260K-Q4_0.gguf  0.2 / 0.2 MiB") && shown.contains("MiB/s"), shown.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliPull)
#include "test_cli_pull.moc"

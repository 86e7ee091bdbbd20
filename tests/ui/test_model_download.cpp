// The start page's "Download a model" against the fake hub on loopback
// (tests/net/hub/fake_hub.h documents the answers it imitates), reached as
// the app reaches the real one: HF_ENDPOINT names it and LLAMA_CACHE a
// fresh cache folder for each test. A suggestion or a typed repository
// shows progress and the model opens; Cancel stops a download mid-way and
// leaves nothing under the final name; a missing quant lists those there
// are; each other failure (no such repository, gated, not a reference, the
// hub unreachable) says what to do; a model in the cache is listed under
// Recent. The hub serves the stories260K GGUFs, so the window really
// opens what came.
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "net/hub/fake_hub.h"
#include "net/hub/hub_client.h"
#include "support/test_models.h"
#include "ui/bridge/model_download.h"
#include "ui/shell/main_window.h"
#include "ui/shell/recent_files.h"
#include "ui/shell/start_page.h"

using namespace kvscope::ui;
using kvscope::test::FakeHub;
using kvscope::test::FakeHubRepo;
namespace fs = std::filesystem;

namespace {

constexpr int kWaitMs = 20000;
const std::string kRepo = "kvscope-test/stories260K-GGUF";
const std::string kStalled = "kvscope-test/stalled-GGUF";
// Bytes of their own: the fake hub finds a download's file by its hash.
const std::string kStalledBytes(1 << 20, 's');
// The first suggestion's repository, served with stories260K's bytes.
const std::string kSuggested = "ggml-org/Qwen3-0.6B-GGUF";

std::string readBytes(const QString& file) {
    std::ifstream in(file.toStdString(), std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

template <typename T> T* child(QWidget& parent, const char* name) {
    auto* widget = parent.findChild<T*>(QLatin1String(name));
    if (!widget)
        qFatal("no %s named %s", T::staticMetaObject.className(), name);
    return widget;
}

// Every file under `dir` whose name ends in `suffix`.
int filesEndingIn(const fs::path& dir, const std::string& suffix) {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec))
        n += e.path().string().ends_with(suffix);
    return n;
}

} // namespace

class TestModelDownload : public QObject {
    Q_OBJECT

    QTemporaryDir temp_;
    std::unique_ptr<FakeHub> hub_;
    std::string q8_;

    // A fresh cache folder, named to LLAMA_CACHE (read by each download).
    fs::path useCache(const QString& name) {
        const QString dir = temp_.filePath(name);
        qputenv("LLAMA_CACHE", dir.toLocal8Bit());
        return dir.toStdString();
    }

private slots:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true); // recent files go to a test location
        KVSCOPE_REQUIRE_MODEL(q4, "stories260K-q4_k_m.gguf");
        const std::string q4Bytes = readBytes(q4);
        q8_ = readBytes(kvscope::test::test_model_path(QStringLiteral("stories260K-q8_0.gguf")));
        QVERIFY(!q4Bytes.empty() && !q8_.empty());
        hub_ = std::make_unique<FakeHub>(std::vector<FakeHubRepo>{
            {kRepo, std::string(40, '1'), {{"stories260K-Q4_K_M.gguf", q4Bytes}, {"stories260K-Q8_0.gguf", q8_}}},
            {kSuggested, std::string(40, '2'), {{"Qwen3-0.6B-Q8_0.gguf", q8_}}},
            {kStalled, std::string(40, '3'), {{"stalled-Q8_0.gguf", kStalledBytes}}},
            {"kvscope-test/gated-GGUF", std::string(40, '4'), {{"gated-Q8_0.gguf", q8_}}, true},
        });
        qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub_->endpoint()));
        qunsetenv("MODEL_ENDPOINT"); // it would win over HF_ENDPOINT
        qunsetenv("HF_TOKEN");
    }

    // Typed into the field: progress shows, the model opens in the window
    // and joins the recent files.
    void typedRepositoryDownloadsAndOpens() {
        const fs::path cache = useCache(QStringLiteral("typed"));
        MainWindow window;
        window.show();
        StartPage& page = *window.startPage();
        QSignalSpy progress(child<ModelDownloader>(page, ""), &ModelDownloader::progress);
        QSignalSpy ready(&window, &MainWindow::modelReady);
        child<QLineEdit>(page, "downloadRepo")->setText(QString::fromStdString(kRepo + ":Q8_0"));
        child<QPushButton>(page, "downloadModel")->click();
        QVERIFY(child<QWidget>(page, "downloadProgressRow")->isVisible());
        QVERIFY(!child<QLabel>(page, "downloadStatus")->text().isEmpty());
        QVERIFY(ready.wait(kWaitMs));
        QVERIFY(window.hasModel());
        QVERIFY(!progress.isEmpty()); // at least the last report, the whole file
        const auto last = progress.constLast().at(0).value<DownloadProgress>();
        QCOMPARE(last.done, static_cast<std::uint64_t>(q8_.size()));
        QCOMPARE(last.file, QStringLiteral("stories260K-Q8_0.gguf"));
        const QString opened = RecentFiles::list().value(0);
        QVERIFY2(opened.startsWith(QString::fromStdString(cache.string())), qPrintable(opened));
        QVERIFY(opened.endsWith(QStringLiteral("/stories260K-Q8_0.gguf")));
        QVERIFY(readBytes(opened) == q8_);
        QVERIFY(!child<QWidget>(page, "downloadProgressRow")->isVisibleTo(&page));
    }

    // A suggestion picked fills the field; activated, it downloads.
    void suggestionDownloads() {
        useCache(QStringLiteral("suggested"));
        StartPage page;
        QSignalSpy downloaded(&page, &StartPage::modelDownloaded);
        auto* suggestions = child<QListWidget>(page, "downloadSuggestions");
        QVERIFY(suggestions->count() >= 4);
        const QString reference = suggestions->item(0)->data(Qt::UserRole).toString();
        QCOMPARE(reference, QString::fromStdString(kSuggested + ":Q8_0"));
        suggestions->setCurrentRow(0);
        QCOMPARE(child<QLineEdit>(page, "downloadRepo")->text(), reference);
        emit suggestions->itemActivated(suggestions->item(0));
        QVERIFY(downloaded.wait(kWaitMs));
        const QString path = downloaded.at(0).at(0).toString();
        QVERIFY2(path.endsWith(QStringLiteral("/Qwen3-0.6B-Q8_0.gguf")), qPrintable(path));
        QVERIFY(readBytes(path) == q8_);
    }

    // Cancel while the hub holds the download half-way: it stops, says so,
    // and nothing is under the file's final name (the part stays to resume).
    void cancelStopsAndLeavesNothingUnderTheFinalName() {
        const fs::path cache = useCache(QStringLiteral("cancelled"));
        hub_->stall_next_download("stalled-Q8_0.gguf", kStalledBytes.size() / 2);
        StartPage page;
        page.show();
        auto& downloader = *child<ModelDownloader>(page, "");
        QSignalSpy progress(&downloader, &ModelDownloader::progress);
        QSignalSpy cancelled(&downloader, &ModelDownloader::cancelled);
        QSignalSpy downloaded(&page, &StartPage::modelDownloaded);
        child<QLineEdit>(page, "downloadRepo")->setText(QString::fromStdString(kStalled));
        child<QPushButton>(page, "downloadModel")->click();
        QTRY_VERIFY_WITH_TIMEOUT(!progress.isEmpty() && progress.constLast().at(0).value<DownloadProgress>().done > 0,
                                 kWaitMs);
        child<QPushButton>(page, "cancelDownload")->click();
        QVERIFY(cancelled.wait(kWaitMs));
        QVERIFY(downloaded.isEmpty());
        QVERIFY(!child<QWidget>(page, "downloadProgressRow")->isVisible());
        auto* message = child<QLabel>(page, "downloadError");
        QVERIFY(message->isVisible());
        QVERIFY2(message->text().contains(QStringLiteral("cancelled")), qPrintable(message->text()));
        const fs::path repo = cache / "models--kvscope-test--stalled-GGUF";
        QVERIFY(!fs::exists(repo / "blobs" / FakeHub::sha256(kStalledBytes)));
        QVERIFY(!fs::exists(repo / "snapshots" / std::string(40, '3') / "stalled-Q8_0.gguf"));
        QCOMPARE(filesEndingIn(repo, ".downloadInProgress"), 1);
        QVERIFY(child<QPushButton>(page, "downloadModel")->isEnabled()); // free for another
    }

    // A quant the repository lacks: the message lists those it has.
    void missingQuantListsThoseThereAre() {
        useCache(QStringLiteral("missing"));
        StartPage page;
        page.show();
        QSignalSpy failed(child<ModelDownloader>(page, ""), &ModelDownloader::failed);
        child<QLineEdit>(page, "downloadRepo")->setText(QString::fromStdString(kRepo + ":Q5_K_M"));
        child<QPushButton>(page, "downloadModel")->click();
        QVERIFY(failed.wait(kWaitMs));
        QCOMPARE(failed.at(0).at(0).value<kvscope::hub::HubErrorKind>(), kvscope::hub::HubErrorKind::NoSuchQuant);
        auto* message = child<QLabel>(page, "downloadError");
        QVERIFY(message->isVisible());
        QVERIFY2(message->text().contains(QStringLiteral("Q4_K_M, Q8_0")), qPrintable(message->text()));
    }

    // Each failure's first line says what to do; the hub's message follows.
    void failureSaysWhatToDo_data() {
        QTest::addColumn<QString>("reference");
        QTest::addColumn<bool>("hubAway"); // HF_ENDPOINT names a port where nothing listens
        QTest::addColumn<kvscope::hub::HubErrorKind>("kind");
        QTest::addColumn<QString>("words");
        using K = kvscope::hub::HubErrorKind;
        QTest::newRow("no such repository") << QStringLiteral("kvscope-test/nothing-here") << false << K::NoSuchRepo
                                            << QStringLiteral("no such repository");
        QTest::newRow("gated") << QStringLiteral("kvscope-test/gated-GGUF") << false << K::Gated
                               << QStringLiteral("set HF_TOKEN");
        QTest::newRow("not a reference") << QStringLiteral("just-a-name") << false << K::BadReference
                                         << QStringLiteral("ORG/NAME:QUANT");
        QTest::newRow("hub unreachable") << QString::fromStdString(kRepo) << true << K::Network
                                         << QStringLiteral("could not be reached");
    }
    void failureSaysWhatToDo() {
        QFETCH(QString, reference);
        QFETCH(bool, hubAway);
        QFETCH(kvscope::hub::HubErrorKind, kind);
        QFETCH(QString, words);
        useCache(QStringLiteral("failures"));
        if (hubAway)
            qputenv("HF_ENDPOINT", "http://127.0.0.1:1/");
        StartPage page;
        page.show();
        QSignalSpy failed(child<ModelDownloader>(page, ""), &ModelDownloader::failed);
        child<QLineEdit>(page, "downloadRepo")->setText(reference);
        child<QPushButton>(page, "downloadModel")->click();
        const bool ended = failed.wait(kWaitMs);
        qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub_->endpoint()));
        QVERIFY(ended);
        QCOMPARE(failed.at(0).at(0).value<kvscope::hub::HubErrorKind>(), kind);
        auto* message = child<QLabel>(page, "downloadError");
        QVERIFY(message->isVisible());
        QVERIFY2(message->text().contains(words), qPrintable(message->text()));
    }

    // A model already in the cache (pulled here by net/hub itself) is listed
    // under Recent after the recent files, and opens from there.
    void cachedModelIsUnderRecent() {
        const fs::path cache = useCache(QStringLiteral("cached"));
        kvscope::hub::HubSettings settings;
        settings.endpoint = hub_->endpoint();
        settings.cache_dir = cache;
        const QString path =
            QString::fromStdString(kvscope::hub::HubClient(settings).pull({kRepo, "Q4_K_M"}).first().string());
        StartPage page;
        const QString recentFile = temp_.filePath(QStringLiteral("elsewhere.gguf"));
        page.setRecentFiles({recentFile});
        auto* recent = child<QListWidget>(page, "recentFiles");
        QCOMPARE(recent->count(), 2);
        QCOMPARE(recent->item(0)->data(Qt::UserRole).toString(), recentFile);
        QCOMPARE(recent->item(1)->data(Qt::UserRole).toString(), path);
        QVERIFY2(recent->item(1)->text().contains(QString::fromStdString(kRepo)), qPrintable(recent->item(1)->text()));
        QSignalSpy picked(&page, &StartPage::recentFileRequested);
        emit recent->itemActivated(recent->item(1));
        QCOMPARE(picked.at(0).at(0).toString(), path);
        page.setRecentFiles({path}); // once opened, it is a recent file, listed once
        QCOMPARE(recent->count(), 1);
    }
};

QTEST_MAIN(TestModelDownload)
#include "test_model_download.moc"

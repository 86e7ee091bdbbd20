// Issue 32, item 5, with a local model loaded (stories260K): after File >
// Disconnect the window is back in a clean local state at once, not at the
// local engine's next step: the block map paints the local engine's pool
// (not the dead server's, not an empty "waiting" map), the Throughput dock
// holds the local engine's figures only, and the chat/map split is as the
// user left it before connecting. The same without a model is
// test_remote_window.
#include <QSignalSpy>
#include <QSplitter>
#include <QStandardPaths>
#include <QtTest>

#include "support/test_models.h"
#include "support/wait.h"
#include "tests/ui/remote_samples.h"
#include "ui/blockmap/block_map_widget.h"
#include "ui/blockmap/live_pool_panel.h"
#include "ui/dashboards/snapshot_history.h"
#include "ui/dashboards/throughput_panel.h"
#include "ui/shell/main_window.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr int kWaitMs = static_cast<int>(kvscope::test::kPatience.count()); // a deadlock guard

} // namespace

class TestRemoteWindowModel : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void disconnectReturnsToTheLocalEngineAsItWas() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        MainWindow window;
        window.resize(1280, 800);
        window.show();
        QSignalSpy ready(&window, &MainWindow::modelReady);
        window.openModel(ModelSource::file(model));
        QVERIFY(ready.wait(kWaitMs));
        QTRY_VERIFY_WITH_TIMEOUT(window.pool()->map()->snapshot() != nullptr, kWaitMs);
        const std::shared_ptr<const PoolSnapshot> localPool = window.pool()->map()->snapshot();

        auto* split = window.findChild<QSplitter*>(QStringLiteral("chatSplitter"));
        const QList<int> before = split->sizes();
        split->setSizes({before[0] + before[2] - 300, 0, 300}); // the user's own split: a narrow map
        const QList<int> mine = split->sizes();
        QVERIFY(mine != before);

        // A kvscope server, then it is gone.
        attach::RemoteSample server = ui::test::kvscopeSample();
        auto engine = std::make_shared<EngineSnapshot>(*server.engine);
        engine->completed_requests = 40;
        server.engine = engine;
        window.showServerSample(std::make_shared<const attach::RemoteSample>(server));
        QCOMPARE(window.pool()->map()->snapshot(), server.engine->pool);
        window.disconnectFromServer();

        // The local engine's pool at once, with no step of its own since.
        const std::shared_ptr<const PoolSnapshot> shown = window.pool()->map()->snapshot();
        QVERIFY(shown);
        QVERIFY(shown != server.engine->pool);
        QCOMPARE(shown->fragmentation.total_blocks, localPool->fragmentation.total_blocks);
        QVERIFY(window.pool()->isVisible());
        QCOMPARE(split->sizes(), mine);
        QCOMPARE(window.history().entries().size(), std::size_t{1}); // the local snapshot alone
        QCOMPARE(window.history().entries().back().completed_requests, std::uint64_t{0});
        QVERIFY(window.raiseDock(QStringLiteral("throughput")));
        QTRY_VERIFY_WITH_TIMEOUT(window.throughput()->figuresText().contains(QStringLiteral("completed 0")), kWaitMs);
    }
};

QTEST_MAIN(TestRemoteWindowModel)
#include "test_remote_window_model.moc"

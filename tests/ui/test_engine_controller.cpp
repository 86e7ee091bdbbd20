// EngineController on its worker thread, driven the way the app drives it:
// commands are posted, results come back as queued signals. Chat turns
// stream and finish, abort stops them, a workload runs to its end, every
// refusal is a signal (failures without a model: test_controller_failures),
// and the UI thread keeps ticking while the engine
// runs flat out (the longest gap between timer ticks is printed, never
// asserted as a timing: only a deadlock-sized bound is checked).
#include <algorithm>
#include <memory>
#include <vector>

#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include "controller_test_support.h"
#include "support/test_models.h"
#include "ui/engine_controller.h"
#include "ui/live_pool_panel.h"

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::ui::test;

class TestEngineController : public QObject {
    Q_OBJECT

private:
    // A controller thread with stories260K loaded.
    std::unique_ptr<EngineThread> loaded(const QString& model, EngineConfig config = EngineController::defaultConfig()) {
        auto engine = std::make_unique<EngineThread>(config);
        QSignalSpy ready(engine->controller(), &EngineController::modelLoaded);
        engine->loadModel(ModelSource::file(model));
        if (!arrives(ready, 1))
            return nullptr;
        return engine;
    }

private slots:
    void chatTurnStreamsTextAndFinishes() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        auto engine = loaded(model);
        QVERIFY(engine);
        EngineController* c = engine->controller();
        QSignalSpy started(c, &EngineController::chatStarted);
        QSignalSpy text(c, &EngineController::chatText);
        QSignalSpy finished(c, &EngineController::chatFinished);
        QSignalSpy snapshots(c, &EngineController::snapshotReady);
        engine->submitChat(userTurn(7, "Once upon a time", 40));
        QVERIFY(arrives(finished, 1));

        QCOMPARE(started.size(), 1);
        QCOMPARE(started.at(0).at(0).toInt(), 7);
        QString all;
        for (const auto& args : text) {
            QCOMPARE(args.at(0).toInt(), 7);
            all += args.at(1).toString();
        }
        QVERIFY2(all.size() > 40, qPrintable(all)); // 40 tokens of a story
        const TurnStats stats = lastStats(finished);
        QCOMPARE(stats.chat, 7);
        QCOMPARE(stats.finish, FinishReason::Length);
        QCOMPARE(stats.generated_tokens, 40u);
        QVERIFY(stats.prompt_tokens > 1);
        QVERIFY(stats.ttft_s > 0 && stats.ttft_s <= stats.seconds);
        QVERIFY(stats.tokens_per_s() > 0);
        // The snapshot after the turn (it follows the turn's end) shows its
        // blocks kept for the prefix cache.
        const auto last = [&] { return snapshots.last().at(0).value<std::shared_ptr<const EngineSnapshot>>(); };
        QTRY_VERIFY_WITH_TIMEOUT(!snapshots.isEmpty() && last()->generated_tokens == 40, kWaitMs);
        QCOMPARE(last()->running, std::size_t{0});
        QVERIFY(last()->pool->fragmentation.cached_free_blocks > 0);
    }

    void greedyTurnsAreReproducible() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        auto engine = loaded(model);
        QVERIFY(engine);
        QSignalSpy text(engine->controller(), &EngineController::chatText);
        QSignalSpy finished(engine->controller(), &EngineController::chatFinished);
        engine->submitChat(userTurn(1, "Once upon a time", 30));
        engine->submitChat(userTurn(2, "Once upon a time", 30)); // concurrently, sharing the prompt's blocks
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 2, kWaitMs);
        QString texts[3];
        for (const auto& args : text)
            texts[args.at(0).toInt()] += args.at(1).toString();
        QVERIFY(!texts[1].isEmpty());
        QCOMPARE(texts[1], texts[2]);
    }

    void abortEndsTheTurn() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        auto engine = loaded(model);
        QVERIFY(engine);
        QSignalSpy finished(engine->controller(), &EngineController::chatFinished);
        engine->submitChat(userTurn(3, "Once upon a time", 400));
        engine->abortChat(3); // queued behind the submission, ahead of its steps
        QVERIFY(arrives(finished, 1));
        QCOMPARE(lastStats(finished).chat, 3);
        QCOMPARE(lastStats(finished).finish, FinishReason::Abort);
        QVERIFY(lastStats(finished).generated_tokens < 400);
        engine->abortChat(99); // no such chat: nothing happens
        QTest::qWait(200);
        QCOMPARE(finished.size(), 1);
    }

    void engineRefusalsArriveAsSignals() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        auto engine = loaded(model);
        QVERIFY(engine);
        EngineController* c = engine->controller();
        QSignalSpy finished(c, &EngineController::chatFinished);
        std::string longMessage;
        for (int i = 0; i < 200; ++i)
            longMessage += "Once upon a time ";
        engine->submitChat(userTurn(4, longMessage.c_str(), 8)); // the message alone outgrows the 512-token context
        QVERIFY(arrives(finished, 1));
        QCOMPARE(lastStats(finished).finish, FinishReason::Error);
        QVERIFY2(lastStats(finished).error.find("context") != std::string::npos, lastStats(finished).error.c_str());

        // A reply asked for beyond the context gets the room there is.
        engine->submitChat(userTurn(4, "Once upon a time", 100'000));
        QVERIFY(arrives(finished, 2));
        const TurnStats limited = lastStats(finished);
        QCOMPARE(limited.finish, FinishReason::Length);
        QCOMPARE(limited.reply_limit, 512 - limited.prompt_tokens);
        QCOMPARE(limited.generated_tokens, limited.reply_limit);

        QSignalSpy errors(c, &EngineController::errorOccurred);
        EngineConfig bad = EngineController::defaultConfig();
        bad.block_size = 0;
        engine->applyConfig(bad);
        QVERIFY(arrives(errors, 1));
        QVERIFY(errors.last().at(0).toString().startsWith(QStringLiteral("The configuration was not applied")));

        // Still usable, and a good configuration takes effect.
        QSignalSpy applied(c, &EngineController::configApplied);
        EngineConfig small = EngineController::defaultConfig();
        small.num_blocks = 64;
        small.block_size = 32;
        engine->applyConfig(small);
        QVERIFY(arrives(applied, 1));
        QCOMPARE(applied.last().at(0).value<EngineConfig>().num_blocks, 64u);
        QSignalSpy snapshots(c, &EngineController::snapshotReady);
        engine->submitChat(userTurn(5, "Once upon a time", 8));
        QVERIFY(arrives(finished, 3));
        QCOMPARE(lastStats(finished).finish, FinishReason::Length);
        QTRY_VERIFY_WITH_TIMEOUT(!snapshots.isEmpty(), kWaitMs);
        const auto last = snapshots.last().at(0).value<std::shared_ptr<const EngineSnapshot>>();
        QCOMPARE(last->pool->blocks.size(), std::size_t{64});
        QCOMPARE(last->pool->layout.block_size(), 32u);
    }

    void workloadRunsToItsEnd() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        auto engine = loaded(model);
        QVERIFY(engine);
        QSignalSpy progress(engine->controller(), &EngineController::workloadProgress);
        QSignalSpy stopped(engine->controller(), &EngineController::workloadStopped);
        WorkloadSpec spec;
        spec.requests = 12;
        spec.distribution = LengthDistribution::Fixed;
        spec.prompt_len = 20;
        spec.output_len = 10;
        spec.arrival_rate = 200; // arrivals spread over ~60 ms
        engine->startWorkload(spec);
        QVERIFY(arrives(stopped, 1));
        QVERIFY(!progress.isEmpty());
        QCOMPARE(progress.last().at(0).toUInt(), 12u); // submitted
        QCOMPARE(progress.last().at(1).toUInt(), 12u); // finished
        QCOMPARE(progress.last().at(2).toUInt(), 12u);
        QCOMPARE(stopped.last().at(0).toUInt(), 0u); // ran to its end: nothing aborted
    }

    void stopWorkloadAbortsItsRequests() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        auto engine = loaded(model);
        QVERIFY(engine);
        QSignalSpy stopped(engine->controller(), &EngineController::workloadStopped);
        QSignalSpy snapshots(engine->controller(), &EngineController::snapshotReady);
        WorkloadSpec spec;
        spec.requests = 200;
        spec.distribution = LengthDistribution::Fixed;
        spec.prompt_len = 100;
        spec.output_len = 300;
        engine->startWorkload(spec);
        // Stop only once the engine holds workload requests, so that the
        // stop has something to abort every time (200 requests of 400
        // tokens keep it busy far longer than a snapshot interval).
        auto inFlight = [&snapshots] {
            const auto s = snapshots.last().at(0).value<std::shared_ptr<const EngineSnapshot>>();
            return s->running + s->waiting + s->swapped;
        };
        QTRY_VERIFY_WITH_TIMEOUT(!snapshots.isEmpty() && inFlight() > 0, kWaitMs);
        engine->stopWorkload();
        QVERIFY(arrives(stopped, 1));
        QVERIFY(stopped.last().at(0).toUInt() > 0); // aborted in the engine
        QCOMPARE(stopped.size(), 1);
        QTRY_VERIFY_WITH_TIMEOUT(inFlight() == 0, kWaitMs);
    }

    // The figure the issue asks for: the engine generates at full speed with
    // a 1,000-block pool (a workload that fills it, plus a chat) while the
    // UI thread paints every snapshot on a block map; a 5 ms timer on the UI
    // thread records the longest gap between its ticks.
    void uiThreadNeverWaits() {
        KVSCOPE_REQUIRE_MODEL(model, "stories260K-f32.gguf");
        EngineConfig config = EngineController::defaultConfig();
        config.num_blocks = 1000;
        auto engine = loaded(model, config);
        QVERIFY(engine);
        EngineController* c = engine->controller();

        LivePoolPanel panel;
        panel.resize(900, 700);
        panel.show();
        int painted = 0;
        QElapsedTimer paintClock;
        qint64 paintMs = 0;
        connect(c, &EngineController::snapshotReady, &panel, [&](std::shared_ptr<const EngineSnapshot> s) {
            paintClock.start();
            panel.setSnapshot(std::move(s), SequencePalette());
            panel.repaint(); // paint now, as the window would
            paintMs = std::max(paintMs, paintClock.elapsed());
            ++painted;
        });

        QElapsedTimer clock;
        qint64 lastTick = 0;
        std::vector<qint64> gaps;
        QTimer ticker;
        ticker.setTimerType(Qt::PreciseTimer);
        connect(&ticker, &QTimer::timeout, this, [&] {
            const qint64 now = clock.elapsed();
            gaps.push_back(now - lastTick);
            lastTick = now;
        });

        QSignalSpy stopped(c, &EngineController::workloadStopped);
        QSignalSpy generatedSpy(c, &EngineController::chatFinished);
        WorkloadSpec spec;
        spec.requests = 64;
        spec.prompt_len = 200;
        spec.output_len = 120;
        spec.max_total = 500;
        spec.shared_prefix = 32;
        // The same timer with the engine idle: what this machine's scheduler alone costs.
        clock.start();
        ticker.start(5);
        QTest::qWait(1000);
        std::sort(gaps.begin(), gaps.end());
        const qint64 idleGap = gaps.empty() ? 0 : gaps.back();
        gaps.clear();
        clock.restart();
        lastTick = 0;
        engine->startWorkload(spec);
        engine->submitChat(userTurn(1, "Once upon a time", 300));
        QVERIFY(arrives(stopped, 1, 120'000)); // a deadlock, not a timing
        const qint64 seconds = clock.elapsed();
        ticker.stop();
        QVERIFY(arrives(generatedSpy, 1));

        QVERIFY(!gaps.empty());
        std::sort(gaps.begin(), gaps.end());
        const qint64 longestGap = gaps.back();
        qInfo("UI thread: longest gap between 5 ms timer ticks %lld ms (99th percentile %lld ms) over %lld ms "
              "of generation (%zu ticks, %d snapshots painted, slowest paint %lld ms; target < 50 ms); "
              "with the engine idle: %lld ms",
              longestGap, gaps[gaps.size() * 99 / 100], seconds, gaps.size(), painted, paintMs, idleGap);
        QVERIFY(painted > 0);
        QVERIFY2(longestGap < 2000, "the UI thread was blocked for seconds: a deadlock or a wait on the engine");
    }
};

QTEST_MAIN(TestEngineController)
#include "test_engine_controller.moc"

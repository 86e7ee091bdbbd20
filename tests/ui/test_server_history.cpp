// ServerHistory (the connected view's bounded history of a llama.cpp or
// vLLM server's figures) on hand-made samples with made-up times, and
// ServerHistoryPlot and ServerPanel drawing it offscreen.
#include <QtTest>

#include "tests/ui/remote_samples.h"
#include "ui/server/server_history.h"
#include "ui/server/server_history_plot.h"
#include "ui/server/server_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

attach::RemoteSample at(attach::RemoteSample s, double time_s, double usage = 0.5) {
    s.time_s = time_s;
    s.data_age_s = 0;
    s.total.kv_usage = usage;
    return s;
}

int pointsOf(const ServerHistoryPlot& plot, const QString& name) {
    for (const ServerHistoryPlot::GraphInfo& g : plot.graphs())
        if (g.name == name)
            return g.points;
    return -1;
}

// Shown offscreen as a window: whether it painted.
bool paints(ServerHistoryPlot& plot, const ServerHistory& history) {
    plot.resize(400, 320);
    plot.setHistory(history, 1.7e9); // a clock time in 2023
    plot.show();
    return QTest::qWaitForWindowExposed(&plot) && !plot.grab().isNull();
}

} // namespace

class TestServerHistory : public QObject {
    Q_OBJECT
private slots:
    void addsLiveSamplesWithTheirFigures() {
        ServerHistory h;
        QVERIFY(h.add(at(test::llamaCppSample(), 1.0, 0.25)));
        QVERIFY(h.add(at(test::llamaCppSample(), 2.0, 0.5)));
        QCOMPARE(h.points().size(), std::size_t(2));
        const ServerHistoryPoint& p = h.points().back();
        QCOMPARE(p.time_s, 2.0);
        QCOMPARE(*p.kv_usage, 0.5);
        QCOMPARE(*p.kv_tokens_used, 100.0);
        QCOMPARE(*p.running, 1.0);
        QCOMPARE(*p.generation_tokens_per_s, 42.5);
        QVERIFY(!p.prompt_tokens_per_s);
        QVERIFY(!p.after_gap);
        QVERIFY(p.ranks.empty());
    }

    void takesTheDataTimeNotThePublishTime() {
        ServerHistory h;
        attach::RemoteSample s = at(test::llamaCppSample(), 10.0);
        s.data_age_s = 0.5;
        QVERIFY(h.add(s));
        QCOMPARE(h.points().back().time_s, 9.5);
        s.time_s = 10.3; // published again, same data (read at 9.5)
        s.data_age_s = 0.8;
        QVERIFY(!h.add(s));
        QCOMPARE(h.points().size(), std::size_t(1));
    }

    void keepsTheTimeAwayAsAGap() {
        ServerHistory h;
        for (double t = 1; t <= 5; ++t)
            QVERIFY(h.add(at(test::vllmSample(), t)));
        attach::RemoteSample away = at(test::vllmSample(), 6);
        away.link = attach::LinkState::Reconnecting;
        for (double t = 6; t <= 30; ++t) { // the last data re-published, ageing, while retrying
            away.time_s = t;
            away.data_age_s = t - 5;
            QVERIFY(!h.add(away));
        }
        QCOMPARE(h.lastSampleTime(), 30.0);
        QCOMPARE(h.points().back().time_s, 5.0);
        attach::RemoteSample back = at(test::vllmSample(), 31);
        back.reconnects = 1;
        QVERIFY(h.add(back));
        back.time_s = 32;
        QVERIFY(h.add(back));
        QCOMPARE(h.points().size(), std::size_t(7));
        QVERIFY(!h.points()[4].after_gap);
        QVERIFY(h.points()[5].after_gap);
        QCOMPARE(h.points()[5].time_s, 31.0);
        QVERIFY(!h.points()[6].after_gap); // same reconnect count as the point before
    }

    void aRestartBetweenLivePollsBreaksTheLine() {
        ServerHistory h;
        QVERIFY(h.add(at(test::llamaCppSample(), 1)));
        attach::RemoteSample restarted = at(test::llamaCppSample(), 2);
        restarted.reconnects = 1;
        QVERIFY(h.add(restarted));
        QVERIFY(h.points().back().after_gap);
    }

    void aNewMonitorOrServerStartsAfresh() {
        ServerHistory h;
        for (double t = 1; t <= 100; ++t)
            h.add(at(test::llamaCppSample(), t));
        QVERIFY(h.add(at(test::llamaCppSample(), 3))); // the clock began again: a new connection
        QCOMPARE(h.points().size(), std::size_t(1));
        QVERIFY(h.add(at(test::vllmSample(), 4))); // another server
        QCOMPARE(h.points().size(), std::size_t(1));
        QVERIFY(h.points().front().ranks.size() == 2);
    }

    void keepsPerRankUsage() {
        ServerHistory h;
        attach::RemoteSample s = at(test::vllmSample(), 1);
        s.ranks[1].figures.kv_usage = 0.75;
        QVERIFY(h.add(s));
        s.time_s = 2;
        s.ranks[1].rank = 3;
        QVERIFY(h.add(s));
        const std::vector<RankUsage> expected{{0, 0.5}, {1, 0.75}};
        QCOMPARE(h.points().front().ranks, expected);
        QCOMPARE(h.ranks(), (std::vector<int>{0, 1, 3}));
    }

    // Ten hours at one sample a second: bounded, the last ten minutes whole,
    // the start still there, points in time order, gaps not lost in thinning.
    void staysBoundedOverHours() {
        ServerHistory h;
        attach::RemoteSample s = test::vllmSample();
        const double hours10 = 10 * 3600;
        for (double t = 1; t <= hours10; ++t) {
            s.time_s = t;
            s.data_age_s = 0;
            s.link = (t > 1000 && t < 1030) ? attach::LinkState::Reconnecting : attach::LinkState::Live;
            h.add(s);
            QVERIFY(h.points().size() <= ServerHistory::kMaxPoints);
        }
        const auto& p = h.points();
        QCOMPARE(p.front().time_s, 1.0);
        QCOMPARE(p.back().time_s, hours10);
        for (std::size_t i = 1; i < p.size(); ++i)
            QVERIFY(p[i - 1].time_s < p[i].time_s);
        const auto recent = std::count_if(p.begin(), p.end(), [&](const ServerHistoryPoint& q) {
            return q.time_s > hours10 - ServerHistory::kFullResolutionS;
        });
        QCOMPARE(recent, static_cast<long>(ServerHistory::kFullResolutionS));
        const auto gaps = std::count_if(p.begin(), p.end(), [](const ServerHistoryPoint& q) { return q.after_gap; });
        QCOMPARE(gaps, 1L);
        const auto gap = std::find_if(p.begin(), p.end(), [](const ServerHistoryPoint& q) { return q.after_gap; });
        QVERIFY(gap->time_s >= 1030);
        QVERIFY(std::prev(gap)->time_s <= 1000);
    }

    // Samples faster than the history holds in ten minutes: still bounded.
    void staysBoundedWhenSamplesComeFast() {
        ServerHistory h;
        attach::RemoteSample s = test::llamaCppSample();
        for (int i = 1; i <= 20000; ++i) {
            s.time_s = i * 0.01;
            s.data_age_s = 0;
            h.add(s);
        }
        QVERIFY(h.points().size() <= ServerHistory::kMaxPoints);
        QVERIFY(h.points().size() >= ServerHistory::kMaxPoints / 2);
        QCOMPARE(h.points().back().time_s, 200.0);
    }

    void plotsALlamaCppHistory() {
        ServerHistory h;
        for (double t = 1; t <= 10; ++t)
            h.add(at(test::llamaCppSample(), t));
        ServerHistoryPlot plot;
        QVERIFY(paints(plot, h));
        QCOMPARE(plot.graphs().size(), std::size_t(4)); // usage; running, waiting, tokens/s
        QCOMPARE(pointsOf(plot, "KV usage"), 10);
        QCOMPARE(pointsOf(plot, "generation tokens/s"), 10);
    }

    void plotsAVllmHistoryPerRankWithItsGap() {
        ServerHistory h;
        h.add(at(test::vllmSample(), 1));
        h.add(at(test::vllmSample(), 2));
        attach::RemoteSample away = at(test::vllmSample(), 3);
        away.link = attach::LinkState::Reconnecting;
        h.add(away);
        h.add(at(test::vllmSample(), 9));
        ServerHistoryPlot plot;
        QVERIFY(paints(plot, h));
        QCOMPARE(plot.graphs().size(), std::size_t(6)); // usage and two ranks; running, waiting, tokens/s
        QCOMPARE(pointsOf(plot, "rank 0"), 4);          // three points and the break before the third
        QCOMPARE(pointsOf(plot, "rank 1"), 4);
        QCOMPARE(pointsOf(plot, "running"), 4);
    }

    void thePanelRecordsRemoteServersOnly() {
        ServerPanel panel;
        panel.resize(500, 900);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        attach::RemoteSample connecting = test::vllmSample();
        connecting.link = attach::LinkState::Connecting;
        panel.showSample(connecting);
        QVERIFY(panel.historyPlot()->isHidden());
        panel.showSample(at(test::vllmSample(), 1));
        panel.showSample(at(test::vllmSample(), 2));
        QCOMPARE(panel.history().points().size(), std::size_t(2));
        QVERIFY(!panel.historyPlot()->isHidden());
        QVERIFY(!panel.grab().isNull());
        panel.showSample(connecting); // connecting again: the history starts again
        QVERIFY(panel.history().empty());
        QVERIFY(panel.historyPlot()->isHidden());
        panel.showSample(at(test::kvscopeSample(), 3));
        QVERIFY(panel.history().empty());
    }
};

QTEST_MAIN(TestServerHistory)
#include "test_server_history.moc"

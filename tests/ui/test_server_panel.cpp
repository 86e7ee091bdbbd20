// The connected view's widgets offscreen: the server panel paints each kind
// of server (llama.cpp's slot map, vLLM's ranks and prefix caches, what a
// kind cannot tell), the slot map draws held tokens and reserved waste
// where they are, the connect dialog refuses what cannot work and says
// why, and recent servers keep the newest first without the API key.
#include <QCoreApplication>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QStandardPaths>
#include <QtTest>

#include "engine/core/error.h"
#include "tests/ui/remote_samples.h"
#include "ui/blockmap/block_look.h"
#include "ui/server/connect_dialog.h"
#include "ui/server/prefix_cache_widget.h"
#include "ui/server/recent_servers.h"
#include "ui/blockmap/sequence_palette.h"
#include "ui/server/server_panel.h"
#include "ui/server/slot_map_widget.h"
#include "ui/shell/theme.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

// The panel, laid out and painted; a blank picture would mean nothing was.
QImage painted(ServerPanel& panel, const attach::RemoteSample& sample) {
    panel.setView(server_view(sample));
    panel.resize(700, 900);
    panel.show();
    QCoreApplication::processEvents();
    return panel.grab().toImage();
}

// A label's text against its background, as painted: the lightness
// (0..255) of the most common pixel (the background) and of the pixel
// farthest from it (the glyphs' cores).
struct Ink {
    int background = 0;
    int text = 0;
};
Ink inkOf(QWidget* label) {
    const QImage image = label->grab().toImage();
    QHash<QRgb, int> counts;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            ++counts[image.pixel(x, y)];
    const QRgb background = std::max_element(counts.keyValueBegin(), counts.keyValueEnd(), [](auto a, auto b) {
                                return a.second < b.second;
                            })->first;
    Ink ink{QColor(background).lightness(), QColor(background).lightness()};
    for (auto it = counts.keyBegin(); it != counts.keyEnd(); ++it)
        if (std::abs(QColor(*it).lightness() - ink.background) > std::abs(ink.text - ink.background))
            ink.text = QColor(*it).lightness();
    return ink;
}

} // namespace

class TestServerPanel : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void paintsLlamaCppWithItsSlotMap() {
        ServerPanel panel;
        QVERIFY(!painted(panel, test::llamaCppSample()).isNull());
        QVERIFY(panel.slotMap()->isVisible());
        QCOMPARE(panel.slotMap()->rows().size(), std::size_t{2});
        QVERIFY(panel.text(QStringLiteral("slots")).contains(QStringLiteral("924 reserved but unused")));
        QVERIFY(panel.text(QStringLiteral("cannotTell")).contains(QStringLiteral("No block map")));
        QVERIFY(panel.text(QStringLiteral("figures")).contains(QStringLiteral("100 of 1,024")));
        QVERIFY(panel.prefixCaches().empty());
    }

    void paintsVllmRanksAndPrefixCache() {
        ServerPanel panel;
        QVERIFY(!painted(panel, test::vllmSample()).isNull());
        QVERIFY(!panel.slotMap()->isVisible());
        const auto caches = panel.prefixCaches();
        QCOMPARE(caches.size(), std::size_t{1}); // rank 1 has no KV events
        QCOMPARE(caches.front()->chainLengths(), (std::vector<std::uint32_t>{5, 3, 1}));
        const QString ranks = panel.text(QStringLiteral("ranks"));
        QVERIFY2(ranks.contains(QStringLiteral("Rank 0")) && ranks.contains(QStringLiteral("Rank 1")),
                 qPrintable(ranks));
        QVERIFY(ranks.contains(QStringLiteral("2 replayed")));
        // Fewer ranks later: the panel follows.
        attach::RemoteSample one = test::vllmSample();
        one.ranks.pop_back();
        painted(panel, one);
        QVERIFY(!panel.text(QStringLiteral("ranks")).contains(QStringLiteral("Rank 1")));
    }

    void paintsKvscopeAndAServerThatIsAway() {
        ServerPanel panel;
        attach::RemoteSample s = test::kvscopeSample();
        QVERIFY(!painted(panel, s).isNull());
        QVERIFY(!panel.slotMap()->isVisible());
        QVERIFY(panel.findChild<QWidget*>(QStringLiteral("serverCannotTell"))->isHidden()); // kvscope tells it all
        QVERIFY(!panel.figuresGreyed());
        s.link = attach::LinkState::Reconnecting;
        s.reconnects = 2;
        s.failed_polls = 3;
        s.retry_in_s = 2.0;
        s.faults = {"GET /metrics: connection refused"};
        painted(panel, s);
        QVERIFY(panel.text(QStringLiteral("freshness")).contains(QStringLiteral("3 attempts so far, retrying every 2 s")));
        QVERIFY(panel.figuresGreyed());
        QVERIFY(panel.text(QStringLiteral("faults")).contains(QStringLiteral("connection refused")));
        QVERIFY(panel.text(QStringLiteral("localOff")).contains(QStringLiteral("File > Disconnect")));
    }

    // A server that stopped answering: its last figures greyed, their age
    // counting on between the samples (which come only every backoff), and
    // back to normal when it answers again.
    void staleFiguresAreGreyedWithTheirAge() {
        ServerPanel panel;
        attach::RemoteSample s = test::llamaCppSample();
        s.link = attach::LinkState::Reconnecting;
        s.failed_polls = 4;
        s.retry_in_s = 8.0;
        s.data_age_s = 12.0;
        panel.show(); // a hidden panel (left behind by a disconnect) does not tick
        panel.showSample(s);
        QVERIFY(panel.figuresGreyed());
        QCOMPARE(panel.text(QStringLiteral("stale")),
                 QStringLiteral("Last figures, as of 12 s ago: the server is not answering"));
        QTRY_VERIFY_WITH_TIMEOUT(panel.text(QStringLiteral("stale")).contains(QStringLiteral("as of 13 s ago")), 5000);
        panel.hide();
        QVERIFY(!panel.isCountingAge());
        panel.show();
        QVERIFY(panel.isCountingAge());
        s.link = attach::LinkState::Live;
        s.failed_polls = 0;
        s.retry_in_s.reset();
        s.data_age_s = 0.1;
        panel.showSample(s);
        QVERIFY(!panel.figuresGreyed());
        QVERIFY(panel.text(QStringLiteral("stale")).isEmpty());
        QVERIFY(panel.findChild<QWidget*>(QStringLiteral("serverFigures"))->toolTip().contains(QStringLiteral("TTFT")));
    }

    // The connected server's heading is the palette's text: light on the
    // dark theme's background, whether the theme came before the panel or
    // after it (it was black on dark, issue 32).
    void headingFollowsTheTheme() {
        applyTheme(Theme::Light);
        ServerPanel before;
        painted(before, test::llamaCppSample());
        const Ink light = inkOf(before.findChild<QWidget*>(QStringLiteral("serverTitle")));
        QVERIFY2(light.text < light.background, qPrintable(QStringLiteral("%1 on %2").arg(light.text).arg(light.background)));
        applyTheme(Theme::Dark);
        ServerPanel after;
        painted(after, test::llamaCppSample());
        QCoreApplication::processEvents();
        for (const ServerPanel* panel : {&before, &after}) {
            const Ink dark = inkOf(panel->findChild<QWidget*>(QStringLiteral("serverTitle")));
            QVERIFY2(dark.background < 128 && dark.text > dark.background + 100,
                     qPrintable(QStringLiteral("%1 on %2").arg(dark.text).arg(dark.background)));
        }
        // The connect dialog's refusal: red, and light enough on the dark window.
        ConnectDialog dialog;
        dialog.setText({.url = QStringLiteral("localhost:8080"), .kind = QStringLiteral("auto")});
        dialog.accept();
        dialog.show();
        QCoreApplication::processEvents();
        auto* error = dialog.findChild<QLabel*>(QStringLiteral("connectError"));
        QVERIFY(error && error->isVisible());
        const Ink refusal = inkOf(error);
        QVERIFY2(refusal.text > refusal.background + 100, // #c0392b on the dark window was 69
                 qPrintable(QStringLiteral("%1 on %2").arg(refusal.text).arg(refusal.background)));
        applyTheme(Theme::System);
    }

    // Slot 0 holds 100 of 512 tokens: the first fifth of its row is its
    // colour, the rest the reserved look; idle, empty slot 1 is all reserved.
    void slotMapDrawsHeldAndReserved() {
        SlotMapWidget map;
        map.setRows(server_view(test::llamaCppSample()).slot_rows);
        map.resize(56 + 1000 + 1, map.sizeHint().height());
        const QImage image = map.grab().toImage();
        const QRgb owner0 = SequencePalette::defaultColor(0);
        const int y0 = 9, y1 = 18 + 4 + 9; // the middle of each row
        QCOMPARE(image.pixel(56 + 100, y0) & RGB_MASK, owner0 & RGB_MASK);
        QCOMPARE(image.pixel(56 + 600, y0) & RGB_MASK, block_colors::reserved_inside(owner0) & RGB_MASK);
        const QRgb owner1 = SequencePalette::defaultColor(1);
        QCOMPARE(image.pixel(56 + 100, y1) & RGB_MASK, block_colors::reserved_inside(owner1) & RGB_MASK);
    }

    void prefixCacheBarsPaint() {
        PrefixCacheWidget bars;
        bars.setChainLengths({5, 3, 1});
        bars.resize(bars.sizeHint());
        const QImage image = bars.grab().toImage();
        // The first (longest) bar reaches the top of the plot; the third does not.
        QCOMPARE(image.pixel(5, 2) & RGB_MASK, block_colors::kCachedFree & RGB_MASK);
        QVERIFY((image.pixel(2 * 16 + 5, 2) & RGB_MASK) != (block_colors::kCachedFree & RGB_MASK));
    }

    void connectDialogRefusesABadUrl() {
        ConnectDialog dialog;
        dialog.setText({.url = QStringLiteral("localhost:8080"), .kind = QStringLiteral("auto")});
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Rejected));
        QVERIFY2(dialog.errorText().contains(QStringLiteral("localhost:8080")), qPrintable(dialog.errorText()));

        dialog.setText({.url = QStringLiteral("http://127.0.0.1:8000/"),
                        .apiKey = QStringLiteral("secret"),
                        .kind = QStringLiteral("vllm"),
                        .kvEvents = QStringLiteral("tcp://127.0.0.1:5557, tcp://127.0.0.1:5558"),
                        .kvTopic = QStringLiteral("kv"),
                        .kvDtype = QStringLiteral("f16")});
        dialog.accept();
        QCOMPARE(dialog.result(), int(QDialog::Accepted));
        QVERIFY(dialog.errorText().isEmpty());
        const attach::ConnectOptions& o = dialog.options();
        QCOMPARE(o.url, std::string("http://127.0.0.1:8000"));
        QCOMPARE(o.api_key, std::string("secret"));
        QCOMPARE(o.kind, std::optional(attach::ServerKind::Vllm));
        QCOMPARE(o.kv_events, (std::vector<std::string>{"tcp://127.0.0.1:5557", "tcp://127.0.0.1:5558"}));
        QCOMPARE(o.kv_topic, std::string("kv"));
    }

    void unknownServerKindIsRefused() {
        try {
            connectOptions({.url = QStringLiteral("http://127.0.0.1:8000"), .kind = QStringLiteral("tgi")});
            QFAIL("an unknown kind was taken");
        } catch (const Error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("unknown server kind 'tgi'")), e.what());
        }
        // No kind, or "auto": detected.
        QVERIFY(!connectOptions({.url = QStringLiteral("http://h:1"), .kind = QStringLiteral("auto")}).kind);
        const ConnectText llama{
            .url = QStringLiteral("http://h:1"), .kind = QStringLiteral("llama.cpp"), .kvDtype = QStringLiteral("q4_0")};
        QCOMPARE(connectOptions(llama).kind, std::optional(attach::ServerKind::LlamaCpp));
        QVERIFY(!connectOptions(llama).kv_unified); // not said: guessed
        ConnectText shared = llama;
        shared.kvUnified = QStringLiteral("yes");
        QCOMPARE(connectOptions(shared).kv_unified, std::optional(true));
        shared.kvUnified = QStringLiteral("sometimes");
        QVERIFY_THROWS_EXCEPTION(Error, connectOptions(shared));
    }

    void recentServersNewestFirstWithoutTheKey() {
        QSettings().remove(QStringLiteral("recentServers"));
        const auto a = [](const char* events) {
            return ConnectText{.url = QStringLiteral("http://a:1"),
                               .apiKey = QStringLiteral("key"),
                               .kind = QStringLiteral("vllm"),
                               .kvEvents = QString::fromLatin1(events),
                               .kvTopic = QStringLiteral("kv")};
        };
        RecentServers::add(a("tcp://a:5557"));
        RecentServers::add({.url = QStringLiteral("http://b:2"),
                            .kind = QStringLiteral("auto"),
                            .kvDtype = QStringLiteral("q8_0"),
                            .kvUnified = QStringLiteral("no")});
        RecentServers::add(a("tcp://a:5557,tcp://a:5558"));
        const auto servers = RecentServers::list();
        QCOMPARE(servers.size(), std::size_t{2});
        QCOMPARE(servers[0].url, QStringLiteral("http://a:1"));
        QVERIFY(servers[0].apiKey.isEmpty());
        QCOMPARE(servers[0].kvEvents, QStringLiteral("tcp://a:5557,tcp://a:5558"));
        QCOMPARE(servers[0].kvTopic, QStringLiteral("kv"));
        QCOMPARE(servers[1].kvDtype, QStringLiteral("q8_0"));
        QCOMPARE(servers[1].kvUnified, QStringLiteral("no"));
        QCOMPARE(RecentServers::label(servers[0]), QStringLiteral("http://a:1 (vllm, 2 KV-event endpoints)"));
        for (int i = 0; i < 2 * RecentServers::kMaximum; ++i)
            RecentServers::add({.url = QStringLiteral("http://h:%1").arg(i + 10)});
        QCOMPARE(RecentServers::list().size(), std::size_t{RecentServers::kMaximum});
    }
};

QTEST_MAIN(TestServerPanel)
#include "test_server_panel.moc"

// The allocator playground: its model after scripted operations (exact block
// and slot counts on both pools, worked out by hand from the allocation
// rules), the A/B/C example, and the panel driven by clicks.
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QtTest>

#include "ui/blockmap/block_map_widget.h"
#include "ui/playground/playground_chart.h"
#include "ui/playground/playground_model.h"
#include "ui/playground/playground_panel.h"
#include "ui/playground/pool_view.h"
#include "ui/look/text_status.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

const FragmentationStats& stats(const PlaygroundModel& m, PoolSide side) {
    return side == PoolSide::Paged ? m.history().back().paged : m.history().back().contiguous;
}

template <typename T>
T* child(QWidget& parent, const char* name) {
    T* w = parent.findChild<T*>(QLatin1String(name));
    if (!w)
        qFatal("no widget named %s", name);
    return w;
}

void click(QWidget& panel, const char* button) { QTest::mouseClick(child<QPushButton>(panel, button), Qt::LeftButton); }

} // namespace

class TestPlayground : public QObject {
    Q_OBJECT

private slots:
    void sequenceNames() {
        QCOMPARE(sequence_name(0), std::string("A"));
        QCOMPARE(sequence_name(2), std::string("C"));
        QCOMPARE(sequence_name(25), std::string("Z"));
        QCOMPARE(sequence_name(26), std::string("AA"));
        QCOMPARE(sequence_name(27), std::string("AB"));
        QCOMPARE(sequence_name(26 + 26 * 26), std::string("AAA"));
    }

    void describeBlocksFoldsRuns() {
        const std::vector<BlockId> scattered = {3, 4, 5, 1};
        QCOMPARE(describe_blocks(scattered), std::string("4 blocks: 3\u20135, 1"));
        const std::vector<BlockId> one = {7};
        QCOMPARE(describe_blocks(one), std::string("1 block: 7"));
        QCOMPARE(describe_blocks({}), std::string("0 blocks"));
    }

    // 16 blocks of 4 slots. Paged blocks come off a FIFO free list (0, 1,
    // ...); contiguous ones are first-fit runs of prompt + max new tokens.
    void scriptedOperations() {
        PlaygroundModel m({.num_blocks = 16, .block_size = 4});
        const SeqId a = m.add_sequence(10, 6); // paged 0-2 (4,4,2); contiguous 0-3 (4,4,2,0)
        {
            const FragmentationStats& c = stats(m, PoolSide::Contiguous);
            QCOMPARE(stats(m, PoolSide::Paged).used_blocks, 3u);
            QCOMPARE(stats(m, PoolSide::Paged).reserved_waste_slots, 0u);
            QCOMPARE(c.used_blocks, 4u);
            QCOMPARE(c.internal_waste_slots, 2u);
            QCOMPARE(c.reserved_waste_slots, 4u);
        }
        const SeqId b = m.add_sequence(4, 0); // paged 3; contiguous 4
        m.append_tokens(a, 3);                // paged: fills 2, takes 4; contiguous: inside its reservation
        const SeqId c = m.fork(a);            // paged shares 0,1,2,4; contiguous copies into 5-8
        m.append_tokens(c, 1);                // paged: copy-on-write of shared block 4 into 5
        m.free(b);                            // paged: block 3 full, so cached-free
        QCOMPARE(m.last_operation(), std::string("Free B"));
        QCOMPARE(m.history().size(), 7u); // reset + 6 operations
        for (PoolSide side : kPoolSides)
            QVERIFY2(m.outcome(side).ok(), m.outcome(side).message.c_str());
        QCOMPARE(m.live_sequences(), (std::vector<SeqId>{a, c}));

        const FragmentationStats& p = stats(m, PoolSide::Paged);
        QCOMPARE(p.used_blocks, 5u);
        QCOMPARE(p.free_blocks, 11u);
        QCOMPARE(p.cached_free_blocks, 1u);
        QCOMPARE(p.token_slots, 15u); // 12 shared (counted once) + A's 1 + C's 2
        QCOMPARE(p.internal_waste_slots, 5u);
        QCOMPARE(p.reserved_waste_slots, 0u);
        QCOMPARE(p.external_blocks, 0u);
        QCOMPARE(p.largest_free_run, 10u);
        const auto pagedSnap = m.snapshot(PoolSide::Paged);
        QCOMPARE(pagedSnap->blocks[0].state, BlockState::Shared);
        QCOMPARE(pagedSnap->blocks[3].state, BlockState::CachedFree);
        QCOMPARE(pagedSnap->sequences.size(), 2u);

        const FragmentationStats& q = stats(m, PoolSide::Contiguous);
        QCOMPARE(q.used_blocks, 8u);
        QCOMPARE(q.free_blocks, 8u);
        QCOMPARE(q.token_slots, 27u);
        QCOMPARE(q.internal_waste_slots, 5u);
        QCOMPARE(q.largest_free_run, 7u);
        QCOMPARE(q.external_blocks, 1u); // block 4, the hole B left
        QCOMPARE(m.manager(PoolSide::Contiguous).block_table(c, 0)[0], 5u);
    }

    void contiguousReservationRunsOut() {
        PlaygroundModel m({.num_blocks = 16, .block_size = 4});
        const SeqId a = m.add_sequence(10, 2); // contiguous: 12 slots
        m.append_tokens(a, 4);
        QVERIFY(m.outcome(PoolSide::Paged).ok());
        const OpOutcome& c = m.outcome(PoolSide::Contiguous);
        QCOMPARE(c.kind, OpOutcome::Kind::Refused);
        QVERIFY2(c.message.starts_with("Appended 2 of 4, then: ") && c.message.find("sequence A") != std::string::npos,
                 c.message.c_str());
        QCOMPARE(m.manager(PoolSide::Paged).num_tokens(a), 14u);
        QCOMPARE(m.manager(PoolSide::Contiguous).num_tokens(a), 12u);
    }

    void abcScenario() {
        PlaygroundModel m;
        m.run_scenario(Scenario::Abc);
        QCOMPARE(m.config().num_blocks, 6u);
        QCOMPARE(m.history().size(), 5u); // reset, add A, add B, free A, add C
        const SeqId c = 2;

        const OpOutcome& refused = m.outcome(PoolSide::Contiguous);
        QCOMPARE(refused.kind, OpOutcome::Kind::Refused);
        QVERIFY2(refused.message.find("external fragmentation") != std::string::npos, refused.message.c_str());
        QVERIFY(!m.manager(PoolSide::Contiguous).contains(c));
        const FragmentationStats& q = stats(m, PoolSide::Contiguous);
        QCOMPARE(q.free_blocks, 5u);
        QCOMPARE(q.largest_free_run, 3u);
        QCOMPARE(q.pending_request_blocks, 4u);
        QCOMPARE(q.external_blocks, 5u); // holes of 2 and 3, both too short for 4

        QVERIFY2(m.outcome(PoolSide::Paged).ok(), m.outcome(PoolSide::Paged).message.c_str());
        QCOMPARE(m.manager(PoolSide::Paged).block_table(c, 0).size(), 4u);
        const FragmentationStats& p = stats(m, PoolSide::Paged);
        QCOMPARE(p.used_blocks, 5u);
        QCOMPARE(p.external_blocks, 0u);
        QCOMPARE(p.external_fragmentation(), 0.0);
        QCOMPARE(m.live_sequences(), (std::vector<SeqId>{1, 2}));

        // C exists only in the paged pool: operations on it say so elsewhere.
        m.append_tokens(c, 1);
        QCOMPARE(m.outcome(PoolSide::Contiguous).kind, OpOutcome::Kind::NotHeld);
        QVERIFY(m.outcome(PoolSide::Paged).ok());
    }

    // Three samples of one prompt (10 tokens, up to 8 new), 6 new tokens each.
    void parallelSamplingScenario() {
        PlaygroundModel m;
        m.run_scenario(Scenario::ParallelSampling);
        QCOMPARE(m.live_sequences(), (std::vector<SeqId>{0, 1, 2}));
        for (PoolSide side : kPoolSides) {
            QVERIFY2(m.outcome(side).ok(), m.outcome(side).message.c_str());
            for (SeqId seq : m.live_sequences())
                QCOMPARE(m.manager(side).num_tokens(seq), 16u);
        }
        // Paged: the two full prompt blocks stay shared by all three; each
        // sample copied the partly filled third block (the last one to
        // write found it no longer shared) and took one more.
        const FragmentationStats& p = stats(m, PoolSide::Paged);
        QCOMPARE(p.used_blocks, 8u);
        QCOMPARE(p.token_slots, 32u);
        QCOMPARE(p.reserved_waste_slots, 0u);
        const auto paged = m.snapshot(PoolSide::Paged);
        QCOMPARE(paged->blocks[0].state, BlockState::Shared);
        QCOMPARE(paged->blocks[0].ref_count, 3u);
        QCOMPARE(paged->owners_of(1).size(), 3u);
        // Contiguous: three full copies of an 18-slot (5-block) reservation.
        const FragmentationStats& c = stats(m, PoolSide::Contiguous);
        QCOMPARE(c.used_blocks, 15u);
        QCOMPARE(c.token_slots, 48u);
        QCOMPARE(c.reserved_waste_slots, 12u);
    }

    void scenarioNames() {
        QCOMPARE(parse_scenario("abc"), std::optional<Scenario>(Scenario::Abc));
        QCOMPARE(parse_scenario("parallel"), std::optional<Scenario>(Scenario::ParallelSampling));
        QCOMPARE(parse_scenario("ABC"), std::nullopt);
    }

    void panelByClicks() {
        PlaygroundPanel panel;
        panel.resize(1280, 700);
        child<QSpinBox>(panel, "poolBlocks")->setValue(20);
        child<QSpinBox>(panel, "blockSize")->setValue(4);
        click(panel, "reset");
        child<QSpinBox>(panel, "promptTokens")->setValue(10);
        child<QSpinBox>(panel, "maxNewTokens")->setValue(6);
        click(panel, "addSequence");
        child<QSpinBox>(panel, "promptTokens")->setValue(4);
        child<QSpinBox>(panel, "maxNewTokens")->setValue(0);
        click(panel, "addSequence");
        auto* sequence = child<QComboBox>(panel, "sequence");
        QCOMPARE(sequence->count(), 2);
        QCOMPARE(sequence->currentText(), QStringLiteral("B")); // the new one is selected
        sequence->setCurrentIndex(0);
        click(panel, "fork");
        QCOMPARE(sequence->currentText(), QStringLiteral("C"));
        click(panel, "free");

        QCOMPARE(panel.model().live_sequences(), (std::vector<SeqId>{0, 1}));
        PoolView* paged = panel.view(PoolSide::Paged);
        PoolView* contiguous = panel.view(PoolSide::Contiguous);
        QCOMPARE(paged->figure(QStringLiteral("sequences")), QStringLiteral("2"));
        QCOMPARE(paged->figure(QStringLiteral("blockOccupancy")), QStringLiteral("20.0 % (4 of 20 blocks)"));
        QCOMPARE(contiguous->figure(QStringLiteral("blockOccupancy")), QStringLiteral("25.0 % (5 of 20 blocks)"));
        QCOMPARE(contiguous->figure(QStringLiteral("reservedWaste")), QStringLiteral("5.0 % (4 slots)"));
        QCOMPARE(paged->map()->snapshot()->blocks.size(), 20u);
        QCOMPARE(panel.chart()->pointCounts(), (std::vector<int>{5, 5, 5, 5}));
        QCOMPARE(child<QLabel>(panel, "lastOperation")->text(), QStringLiteral("Last operation: <b>Free C</b>"));
    }

    // The chart's lines stand out from its background (WCAG's 3:1 for
    // graphics) on a light and on a dark palette.
    void chartLinesFollowTheTheme() {
        PlaygroundChart chart;
        const auto check = [&chart](const QColor& base) {
            for (int series = 0; series < 4; ++series)
                QVERIFY2(contrastRatio(chart.seriesColour(series), base) >= 3.0,
                         qPrintable(chart.seriesColour(series).name() + QStringLiteral(" on ") + base.name()));
        };
        check(chart.palette().color(QPalette::Base));
        QPalette dark = chart.palette();
        dark.setColor(QPalette::Window, QColor(0x2d, 0x2f, 0x33));
        dark.setColor(QPalette::Base, QColor(0x1f, 0x21, 0x24));
        chart.setPalette(dark);
        check(dark.color(QPalette::Base));
    }

    void panelShowsTheRefusalInRed() {
        PlaygroundPanel panel;
        click(panel, "abcScenario");
        QCOMPARE(child<QSpinBox>(panel, "poolBlocks")->value(), 6);
        QLabel* refused = panel.view(PoolSide::Contiguous)->outcomeLabel();
        QCOMPARE(refused->property("outcome").toString(), QStringLiteral("refused"));
        QCOMPARE(refused->palette().color(QPalette::WindowText), statusTextColour(TextStatus::Error, refused->palette()));
        QVERIFY2(refused->text().contains(QStringLiteral("external fragmentation")), qPrintable(refused->text()));
        QCOMPARE(panel.view(PoolSide::Paged)->outcomeLabel()->property("outcome").toString(), QStringLiteral("done"));
        QVERIFY(panel.view(PoolSide::Paged)->figure(QStringLiteral("externalFragmentation")).startsWith(QStringLiteral("0.0 %")));
        QVERIFY(panel.view(PoolSide::Contiguous)->figure(QStringLiteral("externalFragmentation")).startsWith(QStringLiteral("83.3 %")));
        QCOMPARE(panel.view(PoolSide::Contiguous)->figure(QStringLiteral("largestFreeRun")), QStringLiteral("3 blocks"));
    }
};

QTEST_MAIN(TestPlayground)
#include "test_playground.moc"

// KvEventsSubscriber (net/attach/kv_events_subscriber.h) against the in-test
// vLLM publisher on loopback: live batches in both encodings, a gap filled
// by replay in both reply layouts, gaps that cannot be filled, a publisher
// restart, an undecodable batch, and a destructor that returns without a
// publisher. Waits are on what the subscriber has seen (wait_until,
// tests/support/wait.h); nothing asserts a timing.
// Before QtTest: remote_sample.h has a member named `slots`, Qt's keyword macro.
#include "net/attach/kv_events_subscriber.h"

#include <QtTest>

#include <algorithm>
#include <chrono>

#include "fake_vllm_publisher.h"
#include "support/wait.h"

using namespace kvscope::attach;
using testing::FakeVllmPublisher;
using testing::ReplayLayout;

Q_DECLARE_METATYPE(kvscope::attach::testing::ReplayLayout)

namespace {

using kvscope::test::wait_until;

constexpr int kRank = 3;

KvEventBatch stores(std::vector<BlockHash> hashes, std::optional<BlockHash> parent = std::nullopt) {
    KvEventBatch b;
    b.ts = 1.0;
    b.data_parallel_rank = kRank;
    b.events.emplace_back(BlockStored{std::move(hashes), parent, 32, 16, "GPU", std::nullopt, std::nullopt, std::nullopt, std::nullopt});
    return b;
}

KvEventsOptions options_for(const FakeVllmPublisher& pub, bool with_replay = true) {
    KvEventsOptions o;
    o.endpoint = pub.endpoint();
    if (with_replay)
        o.replay_endpoint = pub.replay_endpoint();
    o.topic = pub.topic();
    o.rank = kRank;
    o.replay_timeout = std::chrono::seconds(10); // generous: a sanitizer build on a busy runner is slow
    return o;
}

bool seen(const KvEventsSubscriber& sub, std::uint64_t seq) {
    return wait_until([&] { return sub.sample().last_seq == seq; });
}

// PUB drops what it sends before the subscription reaches it: an empty
// batch each try until the subscriber has heard one, then until it has
// heard the last one sent, so that none is still on its way.
bool join(FakeVllmPublisher& pub, const KvEventsSubscriber& sub) {
    std::uint64_t last = 0;
    const bool heard = wait_until([&] {
        if (sub.sample().batches > 0)
            return true;
        last = pub.publish(KvEventBatch{});
        return false;
    });
    return heard && seen(sub, last);
}

bool any_contains(const std::vector<std::string>& faults, const std::string& part) {
    return std::any_of(faults.begin(), faults.end(), [&](const std::string& f) { return f.find(part) != std::string::npos; });
}

// What the subscriber made of the stream, in one line.
QString outcome(const PrefixCacheSample& s) {
    return QString("%1 blocks, longest chain %2, %3 replayed, %4 lost")
        .arg(s.blocks)
        .arg(s.longest_chain)
        .arg(s.replayed)
        .arg(s.lost);
}

} // namespace

class TestKvEventsSubscriber : public QObject {
    Q_OBJECT

private slots:
    void liveBatchesInEitherEncodingBuildTheMap() {
        FakeVllmPublisher pub;
        KvEventsSubscriber sub(options_for(pub));
        QVERIFY(join(pub, sub));
        pub.publish(stores({1, 2, 3}));
        pub.set_encoding({testing::BatchShape::Map, testing::EventShape::Map, testing::HashShape::Bytes});
        const std::uint64_t last = pub.publish(stores({4, 5}, 3));
        QVERIFY(seen(sub, last));
        const PrefixCacheSample s = sub.sample();
        QCOMPARE(outcome(s), QString("5 blocks, longest chain 5, 0 replayed, 0 lost"));
        QCOMPARE(s.chains, 1u);
        QVERIFY(s.age_s.has_value() && *s.age_s >= 0);
        QVERIFY(sub.take_faults().empty());
        QCOMPARE(pub.replay_requests(), 0u);
    }

    void gapIsFilledByReplay_data() {
        QTest::addColumn<ReplayLayout>("layout");
        QTest::newRow("v0.25: [seq, payload]") << ReplayLayout::V025;
        QTest::newRow("v0.26: [topic, seq, payload]") << ReplayLayout::V026;
    }
    void gapIsFilledByReplay() {
        QFETCH(ReplayLayout, layout);
        FakeVllmPublisher pub;
        pub.set_replay_layout(layout);
        KvEventsSubscriber sub(options_for(pub));
        QVERIFY(join(pub, sub));
        pub.publish(stores({1}));
        pub.withhold(stores({2}, 1));
        pub.withhold(stores({3}, 2));
        const std::uint64_t last = pub.publish(stores({4}, 3));
        QVERIFY(seen(sub, last));
        QCOMPARE(outcome(sub.sample()), QString("4 blocks, longest chain 4, 2 replayed, 0 lost"));
        QCOMPARE(pub.replay_requests(), 1u);
        QVERIFY(sub.take_faults().empty());
    }

    // The replay buffer no longer holds the first missed batch: it is lost,
    // the map is emptied there, and what follows rebuilds it.
    void gapTheReplayCannotFillIsLost() {
        FakeVllmPublisher pub;
        KvEventsSubscriber sub(options_for(pub));
        QVERIFY(join(pub, sub));
        pub.publish(stores({1, 2}));
        const std::uint64_t gone = pub.withhold(stores({3}, 2));
        const std::uint64_t kept = pub.withhold(stores({10}));
        pub.forget_replay_before(kept);
        const std::uint64_t last = pub.publish(stores({11}, 10));
        QVERIFY(seen(sub, last));
        // 10 and 11: blocks 1 and 2 went with the resync
        QCOMPARE(outcome(sub.sample()), QString("2 blocks, longest chain 2, 1 replayed, 1 lost"));
        const auto faults = sub.take_faults();
        QVERIFY2(any_contains(faults, "rank 3: batch " + std::to_string(gone) + " lost (the replay holds from " +
                                          std::to_string(kept) + ")"),
                 faults.empty() ? "no fault" : faults.front().c_str());
    }

    void gapWithoutReplayEndpointIsLost() {
        FakeVllmPublisher pub;
        KvEventsSubscriber sub(options_for(pub, false));
        QVERIFY(join(pub, sub));
        pub.publish(stores({1}));
        pub.skip(3);
        const std::uint64_t last = pub.publish(stores({2}));
        QVERIFY(seen(sub, last));
        QCOMPARE(outcome(sub.sample()), QString("1 blocks, longest chain 1, 0 replayed, 3 lost"));
        QVERIFY(any_contains(sub.take_faults(), "lost (no replay endpoint given)"));
        QCOMPARE(pub.replay_requests(), 0u);
    }

    void publisherRestartEmptiesTheMap() {
        FakeVllmPublisher pub;
        KvEventsSubscriber sub(options_for(pub));
        QVERIFY(join(pub, sub));
        QVERIFY(seen(sub, pub.publish(stores({1, 2}))));
        pub.restart();
        QCOMPARE(pub.publish(stores({7})), 0u);
        QVERIFY(seen(sub, 0));
        QCOMPARE(outcome(sub.sample()), QString("1 blocks, longest chain 1, 0 replayed, 0 lost"));
        QVERIFY(any_contains(sub.take_faults(), "publisher restarted"));
    }

    void undecodableBatchCountsLost() {
        FakeVllmPublisher pub;
        KvEventsSubscriber sub(options_for(pub));
        QVERIFY(join(pub, sub));
        pub.publish(stores({1}));
        const std::uint64_t bad = pub.publish_payload("\x93garbage");
        const std::uint64_t last = pub.publish(stores({5}));
        QVERIFY(seen(sub, last));
        QCOMPARE(outcome(sub.sample()), QString("1 blocks, longest chain 1, 0 replayed, 1 lost"));
        QVERIFY(any_contains(sub.take_faults(), "batch " + std::to_string(bad) + " lost (undecodable: "));
    }

    void batchesOfAnotherRankAreReportedOnce() {
        FakeVllmPublisher pub;
        KvEventsSubscriber sub(options_for(pub));
        QVERIFY(join(pub, sub));
        KvEventBatch other = stores({1});
        other.data_parallel_rank = 5;
        pub.publish(other);
        QVERIFY(seen(sub, pub.publish(other)));
        const auto faults = sub.take_faults();
        QCOMPARE(faults.size(), std::size_t{1});
        QCOMPARE(QString::fromStdString(faults.front()),
                 QString("rank 3: batches say data_parallel_rank 5: is this endpoint given in rank order?"));
        QCOMPARE(sub.sample().blocks, 1u); // applied all the same: the user may have numbered ranks differently
    }

    // Nothing listens on either endpoint: the thread polls, and the
    // destructor still returns (ctest's timeout would catch a hang).
    void stopsWithoutAPublisher() {
        KvEventsOptions o;
        o.endpoint = "tcp://127.0.0.1:1";
        o.replay_endpoint = "tcp://127.0.0.1:2";
        {
            KvEventsSubscriber sub(o);
            QCOMPARE(sub.sample().batches, 0u);
            QVERIFY(!sub.sample().age_s);
        }
        o.endpoint = "not an endpoint";
        KvEventsSubscriber bad(o);
        QVERIFY(wait_until([&] { return any_contains(bad.take_faults(), "cannot subscribe to not an endpoint"); }));
    }
};

QTEST_GUILESS_MAIN(TestKvEventsSubscriber)
#include "test_kv_events_subscriber.moc"

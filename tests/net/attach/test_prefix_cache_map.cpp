// The prefix cache of one vLLM rank (net/attach/prefix_cache_map.h): chains
// by parent hash, removals that split them, clears, other media, the cap on
// blocks held, and parent cycles only a hostile publisher can make.
// Before QtTest: remote_sample.h has a member named `slots`, Qt's keyword macro.
#include "net/attach/prefix_cache_map.h"

#include <QtTest>

#include <numeric>


using namespace kvscope::attach;

namespace {

KvEventBatch batch_of(std::vector<KvEvent> events) {
    KvEventBatch b;
    b.events = std::move(events);
    return b;
}

BlockStored stored(std::vector<BlockHash> hashes, std::optional<BlockHash> parent = std::nullopt,
                   std::optional<std::string> medium = std::nullopt) {
    BlockStored e;
    e.hashes = std::move(hashes);
    e.parent = parent;
    e.block_size = 16;
    e.tokens = 16 * e.hashes.size();
    e.medium = std::move(medium);
    return e;
}

BlockRemoved removed(std::vector<BlockHash> hashes, std::optional<std::string> medium = std::nullopt) {
    return BlockRemoved{std::move(hashes), std::move(medium), std::nullopt};
}

void apply(PrefixCacheMap& map, KvEvent event) {
    map.apply(batch_of({std::move(event)}));
}

std::vector<BlockHash> range(BlockHash first, std::size_t n) {
    std::vector<BlockHash> v(n);
    std::iota(v.begin(), v.end(), first);
    return v;
}

// The forest's figures in one line: blocks, roots, chain lengths longest
// first (whose first is longest_chain).
QString forest(const PrefixCacheSample& s) {
    QString text = QString("%1 blocks, %2 chains:").arg(s.blocks).arg(s.chains);
    for (std::uint32_t n : s.chain_lengths)
        text += QString(" %1").arg(n);
    if (s.longest_chain != (s.chain_lengths.empty() ? 0 : s.chain_lengths.front()))
        text += QString(" (longest_chain %1 disagrees)").arg(s.longest_chain);
    return text;
}

} // namespace

class TestPrefixCacheMap : public QObject {
    Q_OBJECT

private slots:
    // A hybrid model: each KV cache group caches the same hashes as blocks
    // of its own; a window group's eviction takes only its own.
    void groupsKeepTheirOwnBlocks() {
        PrefixCacheMap map;
        BlockStored full = stored({1, 2, 3});
        full.group_idx = 0;
        full.kv_cache_spec_kind = "full_attention";
        BlockStored window = full;
        window.group_idx = 1;
        window.kv_cache_spec_kind = "sliding_window";
        window.kv_cache_spec_sliding_window = 512;
        apply(map, full);
        apply(map, window);
        apply(map, BlockRemoved{{1}, std::nullopt, 1}); // left the window, then evicted
        QVERIFY(map.contains(1, 0) && !map.contains(1, 1) && map.contains(2, 1));
        QCOMPARE(map.parent_of(2, 1), std::optional<BlockHash>(1)); // its parent is gone: a root now
        const PrefixCacheSample s = map.sample();
        QCOMPARE(forest(s), QString("5 blocks, 2 chains: 3 2"));
        QCOMPARE(s.groups.size(), std::size_t{2});
        QCOMPARE(s.groups[0], (PrefixCacheGroupSample{0, "full_attention", std::nullopt, 3, 1, 3}));
        QCOMPARE(s.groups[1], (PrefixCacheGroupSample{1, "sliding_window", 512, 2, 1, 2}));
    }

    // Events without a group (older vLLMs, one-group models) are group 0's.
    void ungroupedEventsAreGroupZero() {
        PrefixCacheMap map;
        QCOMPARE(map.sample().groups, (std::vector<PrefixCacheGroupSample>{{0, std::nullopt, std::nullopt, 0, 0, 0}}));
        apply(map, stored({1, 2}));
        QVERIFY(map.contains(2, 0));
        QCOMPARE(map.sample().groups, (std::vector<PrefixCacheGroupSample>{{0, std::nullopt, std::nullopt, 2, 1, 2}}));
    }

    void blocksChainByParent() {
        PrefixCacheMap map;
        apply(map, stored({1, 2, 3}));
        apply(map, stored({4, 5}, 3));
        QCOMPARE(map.parent_of(1), std::nullopt);
        QCOMPARE(map.parent_of(2), std::optional<BlockHash>(1));
        QCOMPARE(map.parent_of(4), std::optional<BlockHash>(3));
        apply(map, stored({6}, 2));        // a branch: the same root
        apply(map, stored({10, 11}, 999)); // its parent is not cached: a root of its own
        QCOMPARE(forest(map.sample()), QString("8 blocks, 2 chains: 5 2"));
        QCOMPARE(map.sample().stored, 8u);
    }

    void removalInTheMiddleSplitsTheChain() {
        PrefixCacheMap map;
        apply(map, stored({1, 2, 3, 4, 5}));
        QCOMPARE(map.sample().chain_lengths, std::vector<std::uint32_t>{5});
        apply(map, removed({3}));
        QCOMPARE(forest(map.sample()), QString("4 blocks, 2 chains: 2 2"));
        QCOMPARE(map.sample().removed, 1u);
        QVERIFY(!map.contains(3));
        QVERIFY(map.contains(4));
    }

    // Blocks stored before the attach are unknown: removing them is counted, not an error.
    void removingAnUnknownBlockIsCounted() {
        PrefixCacheMap map;
        apply(map, stored({1}));
        apply(map, removed({1, 77}));
        QCOMPARE(map.size(), std::size_t{0});
        QCOMPARE(map.unknown_removals(), 1u);
        QCOMPARE(map.sample().removed, 2u);
    }

    void clearEmptiesTheMap() {
        PrefixCacheMap map;
        map.apply(batch_of({stored({1, 2}), AllBlocksCleared{}, stored({3})}));
        PrefixCacheSample s = map.sample();
        QCOMPARE(s.blocks, 1u);
        QCOMPARE(s.cleared, 1u);
        QCOMPARE(s.stored, 3u);
        map.forget_all(); // a resync: no event counted
        QCOMPARE(forest(map.sample()), QString("0 blocks, 0 chains:"));
        QCOMPARE(map.sample().cleared, 1u);
    }

    void otherMediaStayOutOfTheGpuMap() {
        PrefixCacheMap map;
        apply(map, stored({1, 2}, std::nullopt, "GPU"));
        apply(map, stored({1, 2, 3}, std::nullopt, "CPU")); // offloaded copies
        apply(map, removed({1}, "CPU"));
        QCOMPARE(map.size(), std::size_t{2});
        QVERIFY(map.contains(1));
        QCOMPARE(map.other_medium_blocks(), 4u);
        QCOMPARE(map.sample().stored, 2u);
    }

    void capDropsTheOldestBlocks() {
        PrefixCacheMap map(3);
        apply(map, stored({1, 2, 3, 4, 5}));
        QCOMPARE(map.size(), std::size_t{3});
        QCOMPARE(map.evicted(), 2u);
        QVERIFY(!map.contains(1) && !map.contains(2));
        QCOMPARE(map.sample().chain_lengths, std::vector<std::uint32_t>{3}); // 3 is now a root
        apply(map, stored({3}));  // stored again: the newest
        apply(map, stored({6}));
        QVERIFY(map.contains(3));
        QVERIFY(!map.contains(4));
        QCOMPARE(map.evicted(), 3u);
    }

    void parentCyclesAreCut() {
        PrefixCacheMap map;
        apply(map, stored({1}, 2));
        apply(map, stored({2}, 1));
        apply(map, stored({7}, 7));
        QCOMPARE(forest(map.sample()), QString("3 blocks, 2 chains: 2 1"));
    }

    void chainLengthsKeepTheLongest64() {
        PrefixCacheMap map;
        for (std::size_t chain = 0; chain < 100; ++chain)
            apply(map, stored(range(1000 * (chain + 1), chain % 10 + 1)));
        const PrefixCacheSample s = map.sample();
        QCOMPARE(s.chains, 100u);
        QCOMPARE(s.chain_lengths.size(), PrefixCacheMap::kMaxChainLengths);
        QVERIFY(std::is_sorted(s.chain_lengths.rbegin(), s.chain_lengths.rend()));
        QCOMPARE(s.chain_lengths.front(), 10u);
        QCOMPARE(s.chain_lengths.back(), 4u); // 10 chains each of 10..5 (60), then 4 of the 4s
    }

    // vLLM's scale: 100k blocks in 1,000 prefixes of 100, then every 50th evicted.
    void figuresAtScale() {
        PrefixCacheMap map;
        for (BlockHash prefix = 0; prefix < 1000; ++prefix)
            apply(map, stored(range(prefix * 1000 + 1, 100)));
        QCOMPARE(map.sample().chains, 1000u);
        QCOMPARE(map.sample().longest_chain, 100u);
        std::vector<BlockHash> every50th;
        for (BlockHash prefix = 0; prefix < 1000; ++prefix)
            every50th.push_back(prefix * 1000 + 50);
        apply(map, removed(every50th));
        const PrefixCacheSample s = map.sample();
        QCOMPARE(s.blocks, 99'000u);
        QCOMPARE(s.chains, 2000u);
        QCOMPARE(s.longest_chain, 50u); // blocks 51..100
    }
};

QTEST_GUILESS_MAIN(TestPrefixCacheMap)
#include "test_prefix_cache_map.moc"

// Randomized operation sequences against the KV cache: after every operation
// the invariants hold, every sequence's slots hold exactly its own tokens'
// fingerprints, and each refusal agrees with can_allocate / can_append.
// Also with a hybrid layout (a full-attention layer and a sliding-window
// one): prompts covered chunk by chunk as far as the pool allows, and the
// window's blocks let go of after every step.
#include <QtTest>

#include <map>
#include <random>
#include <set>

#include "kv_test_support.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

struct Counts {
    int ops = 0, allocs = 0, refused = 0, appends = 0, forks = 0, frees = 0, swaps = 0, prefix_hits = 0;
    std::size_t released = 0; // blocks window groups let go of
};

class Fuzzer {
public:
    Fuzzer(const KvCacheConfig& c, std::uint32_t seed) : kv_(c), rng_(seed) {}

    void step() {
        switch (pick(0, 9)) {
        case 0: case 1: add(); break;
        case 2: case 3: case 4: append(); break;
        case 5: fork(); break;
        case 6: case 7: release(); break;
        case 8: swap(); break;
        default: append_burst(); break;
        }
        ++counts_.ops;
    }

    // Independent checks, from the snapshot and the test's own token lists.
    void verify() {
        kv_.check_invariants();
        const auto snap = kv_.snapshot();
        std::vector<std::uint32_t> holders(snap->blocks.size(), 0);
        for (const auto& [id, toks] : model_) {
            QCOMPARE(kv_.num_tokens(id), static_cast<std::uint32_t>(toks.size()));
            if (swapped_.contains(id))
                continue;
            for (std::size_t g = 0; g < kv_.layout().num_groups(); ++g) {
                const auto table = kv_.block_table(id, g);
                for (BlockId b : std::set<BlockId>(table.begin(), table.end())) // a contiguous ring repeats its run
                    if (b != kNoBlock)
                        ++holders[b];
            }
            QCOMPARE(first_wrong_slot(kv_, id, toks), -1);
        }
        std::size_t used = 0;
        for (BlockId b = 0; b < snap->blocks.size(); ++b) {
            QCOMPARE(snap->blocks[b].ref_count, holders[b]);
            QCOMPARE(snap->blocks[b].owner_count, holders[b]);
            used += holders[b] > 0;
        }
        QCOMPARE(snap->fragmentation.used_blocks + snap->fragmentation.free_blocks, snap->blocks.size());
        QCOMPARE(snap->fragmentation.used_blocks, used);
    }

    void drain() {
        while (!model_.empty())
            release_seq(model_.begin()->first);
        verify();
        QCOMPARE(kv_.fragmentation().free_blocks, std::size_t{kv_.config().num_blocks});
        QCOMPARE(kv_.snapshot()->swap_blocks_used, 0u);
    }

    const Counts& counts() const { return counts_; }

private:
    int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

    std::optional<SeqId> any_seq(bool resident) {
        std::vector<SeqId> ids;
        for (const auto& [id, toks] : model_)
            if (!resident || !swapped_.contains(id))
                ids.push_back(id);
        if (ids.empty())
            return std::nullopt;
        return ids[static_cast<std::size_t>(pick(0, static_cast<int>(ids.size()) - 1))];
    }

    // Prompts start with one of a few shared "system prompts" so the prefix
    // cache is hit often; the tail is random.
    std::vector<TokenId> prompt() {
        std::vector<TokenId> p = tokens(static_cast<std::size_t>(pick(0, 3) * 5), 1000 * pick(1, 3));
        const int tail = pick(1, 20);
        for (int i = 0; i < tail; ++i)
            p.push_back(pick(0, 3));
        return p;
    }

    void add() {
        const auto p = prompt();
        const auto max_new = static_cast<std::uint32_t>(pick(0, 24));
        const SeqId id = next_id_++;
        const AllocStatus status = kv_.can_allocate(p, max_new);
        try {
            const std::uint32_t cached = kv_.allocate(id, p, max_new);
            QCOMPARE(status, AllocStatus::Ok);
            write_prompt(kv_, id, p, cached);
            counts_.prefix_hits += cached > 0;
            model_[id] = p;
            ++counts_.allocs;
            advance_windows(id);
        } catch (const KvError&) {
            QVERIFY(status != AllocStatus::Ok);
            QVERIFY(!kv_.contains(id));
            ++counts_.refused;
        }
    }

    // What the scheduler does for a prompt: its window groups covered a
    // chunk at a time, as far as free blocks allow, and after each chunk
    // what the window left behind let go of.
    void advance_windows(SeqId id) {
        const std::uint32_t chunk = kv_.config().chunk_tokens;
        while (kv_.covered_tokens(id) < kv_.num_tokens(id)) {
            const std::uint32_t end = std::min(kv_.covered_tokens(id) + chunk, kv_.num_tokens(id));
            if (!kv_.can_cover(id, end))
                return;
            kv_.cover(id, end);
            counts_.released += kv_.release_out_of_window(id, end);
        }
    }

    void append_to(SeqId id) {
        advance_windows(id);
        const bool can = kv_.can_append(id);
        const auto token = static_cast<TokenId>(pick(0, 3));
        try {
            const SlotRef slot = kv_.append(id, token);
            QVERIFY(can);
            auto& toks = model_[id];
            write_token(kv_, slot, token, static_cast<std::uint32_t>(toks.size()));
            toks.push_back(token);
            ++counts_.appends;
            counts_.released += kv_.release_out_of_window(id, static_cast<std::uint32_t>(toks.size()));
        } catch (const KvError&) {
            QVERIFY(!can);
        }
    }

    void append() {
        if (const auto id = any_seq(false))
            append_to(*id);
    }

    void append_burst() {
        if (const auto id = any_seq(true))
            for (int i = pick(1, 12); i > 0; --i)
                append_to(*id);
    }

    void fork() {
        const auto parent = any_seq(true);
        if (!parent)
            return;
        const SeqId child = next_id_++;
        try {
            kv_.fork(*parent, child);
            model_[child] = model_[*parent];
            ++counts_.forks;
        } catch (const KvError&) {
            QCOMPARE(kv_.config().mode, AllocationMode::Contiguous); // paged forks always succeed
        }
    }

    void release_seq(SeqId id) {
        kv_.free(id);
        model_.erase(id);
        swapped_.erase(id);
        ++counts_.frees;
    }

    void release() {
        if (const auto id = any_seq(false))
            release_seq(*id);
    }

    void swap() {
        const auto id = any_seq(false);
        if (!id)
            return;
        if (swapped_.contains(*id)) {
            if (kv_.can_swap_in(*id) == AllocStatus::Ok) {
                kv_.swap_in(*id);
                swapped_.erase(*id);
                ++counts_.swaps;
            }
        } else if (kv_.can_swap_out(*id)) {
            kv_.swap_out(*id);
            swapped_.insert(*id);
            ++counts_.swaps;
        }
    }

    KvCacheManager kv_;
    std::mt19937 rng_;
    std::map<SeqId, std::vector<TokenId>> model_;
    std::set<SeqId> swapped_;
    SeqId next_id_ = 1;
    Counts counts_;
};

} // namespace

class TestKvRandomized : public QObject {
    Q_OBJECT
private slots:
    void random_operations_data();
    void random_operations();
};

void TestKvRandomized::random_operations_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("blocks");
    QTest::addColumn<int>("block_size");
    QTest::addColumn<bool>("prefix_caching");
    QTest::addColumn<bool>("hybrid");
    QTest::newRow("paged-bs4-cached") << int(AllocationMode::Paged) << 24 << 4 << true << false;
    QTest::newRow("paged-bs1-cached") << int(AllocationMode::Paged) << 120 << 1 << true << false;
    QTest::newRow("paged-bs16-nocache") << int(AllocationMode::Paged) << 12 << 16 << false << false;
    QTest::newRow("paged-bs8-tiny") << int(AllocationMode::Paged) << 5 << 8 << true << false;
    QTest::newRow("contiguous-bs4") << int(AllocationMode::Contiguous) << 32 << 4 << false << false;
    QTest::newRow("contiguous-bs2") << int(AllocationMode::Contiguous) << 50 << 2 << false << false;
    QTest::newRow("hybrid-paged-bs4-cached") << int(AllocationMode::Paged) << 48 << 4 << true << true;
    QTest::newRow("hybrid-paged-bs2-small") << int(AllocationMode::Paged) << 36 << 2 << true << true;
    QTest::newRow("hybrid-contiguous-bs4") << int(AllocationMode::Contiguous) << 64 << 4 << false << true;
}

void TestKvRandomized::random_operations() {
    QFETCH(int, mode);
    QFETCH(int, blocks);
    QFETCH(int, block_size);
    QFETCH(bool, prefix_caching);
    QFETCH(bool, hybrid);
    constexpr int kSeeds = 12, kOpsPerSeed = 1000;
    Counts total;
    for (std::uint32_t seed = 1; seed <= kSeeds; ++seed) {
        KvCacheConfig c = config(static_cast<std::uint32_t>(blocks), static_cast<std::uint32_t>(block_size),
                                 static_cast<AllocationMode>(mode), prefix_caching, 10);
        if (hybrid) { // layer 0 full attention, layer 1 a window of 3 blocks; chunks of 6 tokens
            const std::vector<std::uint32_t> windows{0, 3 * static_cast<std::uint32_t>(block_size)};
            c.layout = KvLayout(c.layout.geometry(), c.layout.dtype(), c.layout.block_size(), KvGroups::from_windows(windows));
            c.chunk_tokens = 6;
        }
        Fuzzer f(c, seed);
        for (int i = 0; i < kOpsPerSeed; ++i) {
            f.step();
            f.verify();
            if (QTest::currentTestFailed())
                QFAIL(qPrintable(QStringLiteral("seed %1, operation %2").arg(seed).arg(i)));
        }
        f.drain();
        const Counts& c2 = f.counts();
        total.ops += c2.ops, total.allocs += c2.allocs, total.refused += c2.refused, total.appends += c2.appends;
        total.forks += c2.forks, total.frees += c2.frees, total.swaps += c2.swaps, total.prefix_hits += c2.prefix_hits;
        total.released += c2.released;
    }
    qInfo("%d ops: %d allocations (%d refused), %d appends, %d forks, %d frees, %d swaps, %d prefix hits",
          total.ops, total.allocs, total.refused, total.appends, total.forks, total.frees, total.swaps,
          total.prefix_hits);
    // The mix must really exercise every path, or the test proves little.
    QVERIFY(total.ops >= 10000);
    QVERIFY(total.allocs > 100 && total.refused > 10 && total.forks > 100 && total.swaps > 100);
    if (prefix_caching)
        QVERIFY(total.prefix_hits >= 10);
    if (hybrid && mode == int(AllocationMode::Paged))
        QVERIFY(total.released > 100);
}

QTEST_APPLESS_MAIN(TestKvRandomized)
#include "test_kv_randomized.moc"

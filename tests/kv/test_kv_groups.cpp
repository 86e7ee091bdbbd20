// KV cache groups: how layers are grouped, what a block and a sequence
// cost, and the manager with a sliding-window group: blocks freed as they
// leave the window, prefix hits by the hybrid rule (hit inside the window,
// window blocks evicted, hit shorter than the window), swapping and forking
// tables with freed entries, and contiguous mode's ring.
#include <QtTest>

#include "engine/kv/contiguous_reservation.h"

#include "kv_test_support.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

constexpr std::uint32_t kBlock = 4;
constexpr std::uint32_t kWindow = 8; // keys less than 8 positions back: 2 blocks behind a block boundary
constexpr std::uint32_t kChunk = 8;

// Every layer l with (l + 1) % period != 0 has `window`: Gemma 3's pattern.
std::vector<std::uint32_t> pattern(std::uint32_t layers, std::uint32_t period, std::uint32_t window) {
    std::vector<std::uint32_t> w(layers);
    for (std::uint32_t l = 0; l < layers; ++l)
        w[l] = (l + 1) % period == 0 ? 0 : window;
    return w;
}

// Layer 0 full attention, layer 1 a window of 8: one layer per block, two groups.
KvLayout hybrid_layout(bool keep_whole = false) {
    const std::vector<std::uint32_t> windows{0, kWindow};
    return KvLayout({2, 2, 8}, KvDtype::F16, kBlock, KvGroups::from_windows(windows, keep_whole));
}

KvCacheConfig hybrid_config(std::uint32_t blocks, AllocationMode mode = AllocationMode::Paged,
                            std::uint32_t swap_blocks = 0, bool keep_whole = false) {
    KvCacheConfig c{hybrid_layout(keep_whole), blocks, mode, true, swap_blocks, 0.0};
    c.chunk_tokens = kChunk;
    return c;
}

// A token's fingerprint in each group's slot (layer g lives in group g).
void write_both(KvCacheManager& kv, SeqId seq, TokenId token, std::uint32_t p) {
    for (std::uint32_t g = 0; g < 2; ++g) {
        const SlotRef s = kv.slot_of(seq, g, p);
        const std::uint64_t f = fingerprint(token, p) + g;
        std::memcpy(kv.block_data(s.block) + kv.layout().k_offset(g, 1, s.slot), &f, sizeof f);
    }
}

bool reads_back(const KvCacheManager& kv, SeqId seq, std::uint32_t g, TokenId token, std::uint32_t p) {
    const SlotRef s = kv.slot_of(seq, g, p);
    std::uint64_t f = 0;
    std::memcpy(&f, kv.block_data(s.block) + kv.layout().k_offset(g, 1, s.slot), sizeof f);
    return f == fingerprint(token, p) + g;
}

// What the scheduler does for a prompt: chunks of kChunk, each covered,
// written, then marked computed.
void prefill(KvCacheManager& kv, SeqId seq, const std::vector<TokenId>& prompt, std::uint32_t from) {
    for (std::uint32_t start = from; start < prompt.size(); start += kChunk) {
        const auto end = std::min<std::uint32_t>(start + kChunk, static_cast<std::uint32_t>(prompt.size()));
        kv.cover(seq, end);
        for (std::uint32_t p = start; p < end; ++p)
            write_both(kv, seq, prompt[p], p);
        kv.release_out_of_window(seq, end);
        kv.check_invariants();
    }
}

// A sequence that ran its whole prompt and ended: what it computed stays
// cached (its window group's early blocks freed first, during the prompt).
void run_and_end(KvCacheManager& kv, SeqId seq, const std::vector<TokenId>& prompt) {
    kv.allocate(seq, prompt, 0);
    prefill(kv, seq, prompt, 0);
    kv.free(seq);
}

std::size_t held(std::span<const BlockId> table) {
    return static_cast<std::size_t>(std::count_if(table.begin(), table.end(), [](BlockId b) { return b != kNoBlock; }));
}

} // namespace

class TestKvGroups : public QObject {
    Q_OBJECT
private slots:
    void layers_are_grouped_by_kind();
    void bytes_per_block_token_and_sequence();
    void window_group_frees_what_leaves_the_window();
    void keep_whole_frees_nothing();
    void prefix_hit_inside_the_window();
    void prefix_hit_whose_window_blocks_were_evicted();
    void prefix_hit_shorter_than_the_window();
    void swap_keeps_freed_entries_and_contents();
    void fork_shares_and_copies_on_write_per_group();
    void contiguous_window_group_is_a_ring();
    void admission_counts_the_window_cap();
};

void TestKvGroups::layers_are_grouped_by_kind() {
    const KvGroups dense = KvGroups::full(16);
    QCOMPARE(dense.size(), std::size_t{1});
    QCOMPARE(dense.layers_per_block(), 16u);
    QVERIFY(!dense.has_windows());

    // Gemma 3 1B: 26 layers, every sixth global. 4 full, 22 window: 2 per
    // block pads nothing (4 would pad 2 of 26 slots, over 5%).
    const KvGroups g1 = KvGroups::from_windows(pattern(26, 6, 512));
    QCOMPARE(g1.layers_per_block(), 2u);
    QCOMPARE(g1.size(), std::size_t{13});
    const std::vector<KvKind> kinds = g1.kinds();
    QCOMPARE(kinds.size(), std::size_t{2});
    QCOMPARE(QString::fromStdString(kinds[0].title()), QString("full attention, 4 layers"));
    QCOMPARE(QString::fromStdString(kinds[1].title()), QString("sliding window 512, 22 layers"));
    QCOMPARE(kinds[0].groups.size(), std::size_t{2});
    QCOMPARE(kinds[1].groups.size(), std::size_t{11});
    QCOMPARE(g1.group_of(5), 0u); // layers 5 and 11 share the first full group
    QCOMPARE(g1.index_in_block(11), 1u);
    QVERIFY(g1.frees(12) && !g1.frees(0));

    // Gemma 3 27B: 62 layers, 10 full, 52 window: 5 per block, 3 padded slots (4.8%).
    const KvGroups g27 = KvGroups::from_windows(pattern(62, 6, 1024));
    QCOMPARE(g27.layers_per_block(), 5u);
    QCOMPARE(g27.size(), std::size_t{13});

    const KvGroups whole = KvGroups::from_windows(pattern(26, 6, 512), true);
    QCOMPARE(whole.size(), std::size_t{13}); // grouped alike, so that block counts compare
    QVERIFY(whole.has_windows() && !whole.frees(12));
}

void TestKvGroups::bytes_per_block_token_and_sequence() {
    // Gemma 3 1B in f16: 1 KV head of 256. A layer's token: 2 x 256 x 2 = 1 KiB.
    const KvLayout layout({26, 1, 256}, KvDtype::F16, 16, KvGroups::from_windows(pattern(26, 6, 512)));
    QCOMPARE(layout.layer_bytes(), std::size_t{16 * 1024});
    QCOMPARE(layout.bytes_per_block(), std::size_t{2 * 16 * 1024});
    QCOMPARE(layout.bytes_per_token(), std::size_t{26 * 1024});
    // vLLM's cap for a window group: ceil((512 - 1 + 512) / 16) + 1 = 65 blocks.
    QCOMPARE(layout.group_blocks(12, 8192, 512), std::size_t{65});
    QCOMPARE(layout.group_blocks(12, 100, 512), std::size_t{7});
    QCOMPARE(layout.group_blocks(0, 8192, 512), std::size_t{512});
    QCOMPARE(layout.sequence_blocks(8192, 512), std::size_t{2 * 512 + 11 * 65});
    QCOMPARE(layout.bytes_for_sequence(8192, 512), std::size_t{(2 * 512 + 11 * 65) * 32 * 1024});
    QCOMPARE(layout.bytes_for_tokens(8192), std::size_t{13 * 512 * 32 * 1024});
    // Layer 11 is the second layer of group 0's blocks.
    QCOMPARE(layout.k_offset(11, 0, 0), layout.layer_bytes());
    QCOMPARE(layout.k_offset(0, 0, 0), std::size_t{0});
}

void TestKvGroups::window_group_frees_what_leaves_the_window() {
    KvCacheManager kv(hybrid_config(32));
    const auto prompt = tokens(20, 100);
    QCOMPARE(kv.allocate(1, prompt, 8), 0u);
    QCOMPARE(kv.covered_tokens(1), kChunk); // the window group starts with the first chunk
    QCOMPARE(kv.block_table(1, 0).size(), std::size_t{5});
    QCOMPARE(kv.block_table(1, 1).size(), std::size_t{2});
    prefill(kv, 1, prompt, 0);
    // Computed 20: positions below 20 - 8 + 1 = 13 are behind every later
    // query, so blocks 0-2 (positions 0-11) went back; block 3 holds 12.
    const auto window = kv.block_table(1, 1);
    QCOMPARE(window.size(), std::size_t{5});
    QCOMPARE(held(window), std::size_t{2});
    QCOMPARE(window[2], kNoBlock);
    QVERIFY(window[3] != kNoBlock);
    QCOMPARE(held(kv.block_table(1, 0)), std::size_t{5});
    QVERIFY_THROWS_EXCEPTION(KvError, kv.slot_of(1, 1, 11));
    for (std::uint32_t p = 12; p < 20; ++p)
        QVERIFY(reads_back(kv, 1, 1, prompt[p], p));
    for (std::uint32_t p = 0; p < 20; ++p)
        QVERIFY(reads_back(kv, 1, 0, prompt[p], p));

    // The freed blocks were full: they stay prefix-cached, marked as left
    // behind by the window.
    const auto snap = kv.snapshot();
    std::size_t left = 0;
    for (const BlockInfo& b : snap->blocks)
        if (b.left_window) {
            ++left;
            QCOMPARE(b.state, BlockState::CachedFree);
            QCOMPARE(b.group, std::uint16_t{1});
        }
    QCOMPARE(left, std::size_t{3});
    const SequenceInfo& info = snap->sequences.front();
    QCOMPARE(info.group_blocks, (std::vector<std::uint32_t>{5, 2}));
    QCOMPARE(info.left_window_blocks, 3u);
    QCOMPARE(info.blocks.size(), std::size_t{7});

    // Decoding on: one block each time a block boundary is crossed, and
    // one more falls out of the window per block.
    for (std::uint32_t p = 20; p < 28; ++p) {
        QVERIFY(kv.can_append(1));
        kv.append(1, 500 + static_cast<TokenId>(p));
        write_both(kv, 1, 500 + static_cast<TokenId>(p), p);
        kv.release_out_of_window(1, p + 1);
        kv.check_invariants();
    }
    QCOMPARE(held(kv.block_table(1, 1)), std::size_t{2}); // computed 28: positions below 21 are behind; blocks 5 and 6 hold 20-27
    kv.free(1);
    kv.check_invariants();
    QCOMPARE(kv.pool().num_free(), std::size_t{32});
}

void TestKvGroups::keep_whole_frees_nothing() {
    KvCacheManager kv(hybrid_config(32, AllocationMode::Paged, 0, true));
    const auto prompt = tokens(20, 100);
    kv.allocate(1, prompt, 0);
    QCOMPARE(kv.covered_tokens(1), 20u);
    prefill(kv, 1, prompt, 0);
    QCOMPARE(held(kv.block_table(1, 1)), std::size_t{5});
    QCOMPARE(kv.pool().num_free(), std::size_t{22});
}

void TestKvGroups::prefix_hit_inside_the_window() {
    KvCacheManager kv(hybrid_config(32));
    const auto a = tokens(24, 100);
    run_and_end(kv, 1, a);
    // The same 24 tokens and 4 more: 6 full blocks usable. The full group
    // has all 6; the window group holds the last ceil(7 / 4) = 2 of them.
    auto b = a;
    for (TokenId t : tokens(4, 900))
        b.push_back(t);
    QCOMPARE(kv.allocate(2, b, 0), 24u);
    const auto window = kv.block_table(2, 1);
    QCOMPARE(window[3], kNoBlock);
    QVERIFY(window[4] != kNoBlock && window[5] != kNoBlock);
    for (std::uint32_t p = 16; p < 24; ++p)
        QVERIFY(reads_back(kv, 2, 1, a[p], p));
    for (std::uint32_t p = 0; p < 24; ++p)
        QVERIFY(reads_back(kv, 2, 0, a[p], p));
    kv.check_invariants();
}

void TestKvGroups::prefix_hit_whose_window_blocks_were_evicted() {
    // a's 24 tokens run and end: the full group leaves blocks 0-5 cached,
    // the window group 0-3 (freed by the window during the prompt, so the
    // oldest in the LRU) and 4-5.
    const auto a = tokens(24, 100);
    auto ran_a = [&](KvCacheManager& kv) {
        run_and_end(kv, 1, a);
        QCOMPARE(kv.pool().num_cached_free(), std::size_t{12});
    };
    // A prompt sharing a's first 16 tokens: the full group has 4 blocks
    // for it, the window group the 2 before that point (blocks 2 and 3).
    auto b = tokens(16, 100);
    for (TokenId t : tokens(8, 700))
        b.push_back(t);

    KvCacheManager cached(hybrid_config(12));
    ran_a(cached);
    QCOMPARE(cached.allocate(2, b, 0), 16u);
    cached.check_invariants();

    // 8 other tokens take 4 fresh blocks (2 per group), evicting the 4
    // oldest cached ones: the window group's blocks 0-3. The full group
    // still has blocks 0-3, but the window group has no 2 blocks in a row
    // before any of those points, nor a run from block 0: no hit.
    KvCacheManager evicted(hybrid_config(12));
    ran_a(evicted);
    evicted.allocate(3, tokens(8, 5000), 0);
    QCOMPARE(evicted.pool().num_cached_free(), std::size_t{8});
    QCOMPARE(evicted.allocate(2, b, 0), 0u);
    evicted.check_invariants();
}

void TestKvGroups::prefix_hit_shorter_than_the_window() {
    KvCacheManager kv(hybrid_config(32));
    const auto a = tokens(24, 100);
    run_and_end(kv, 1, a);
    // 6 tokens: one usable block, fewer than the 2 the window wants behind
    // a hit: the run from the first block on is the hit.
    auto b = tokens(4, 100);
    b.push_back(1);
    b.push_back(2);
    QCOMPARE(kv.allocate(2, b, 0), 4u);
    QVERIFY(kv.block_table(2, 1)[0] != kNoBlock);
    for (std::uint32_t p = 0; p < 4; ++p)
        QVERIFY(reads_back(kv, 2, 1, a[p], p));
    kv.check_invariants();
}

void TestKvGroups::swap_keeps_freed_entries_and_contents() {
    KvCacheManager kv(hybrid_config(32, AllocationMode::Paged, 32));
    const auto prompt = tokens(20, 100);
    kv.allocate(1, prompt, 4);
    prefill(kv, 1, prompt, 0);
    const std::vector<BlockId> before(kv.block_table(1, 1).begin(), kv.block_table(1, 1).end());
    QVERIFY(kv.can_swap_out(1));
    kv.swap_out(1);
    kv.check_invariants();
    QCOMPARE(kv.pool().num_free(), std::size_t{32});
    QCOMPARE(kv.can_swap_in(1), AllocStatus::Ok);
    kv.swap_in(1);
    kv.check_invariants();
    const auto after = kv.block_table(1, 1);
    QCOMPARE(after.size(), before.size());
    for (std::size_t i = 0; i < after.size(); ++i)
        QCOMPARE(after[i] == kNoBlock, before[i] == kNoBlock);
    for (std::uint32_t p = 12; p < 20; ++p)
        QVERIFY(reads_back(kv, 1, 1, prompt[p], p));
    for (std::uint32_t p = 0; p < 20; ++p)
        QVERIFY(reads_back(kv, 1, 0, prompt[p], p));
}

void TestKvGroups::fork_shares_and_copies_on_write_per_group() {
    KvCacheManager kv(hybrid_config(32));
    const auto prompt = tokens(18, 100); // a partial last block in both groups
    kv.allocate(1, prompt, 8);
    prefill(kv, 1, prompt, 0);
    const std::size_t free_before = kv.pool().num_free();
    kv.fork(1, 2);
    QCOMPARE(kv.pool().num_free(), free_before);
    kv.append(2, 77);
    QCOMPARE(kv.pool().num_free(), free_before - 2); // each group copied its shared last block
    write_both(kv, 2, 77, 18);
    QVERIFY(reads_back(kv, 2, 1, prompt[17], 17)); // the copy kept the earlier slots
    kv.release_out_of_window(2, 19);
    kv.check_invariants();
    kv.free(1);
    kv.free(2);
    kv.check_invariants();
}

void TestKvGroups::contiguous_window_group_is_a_ring() {
    KvCacheManager kv(hybrid_config(32, AllocationMode::Contiguous));
    const auto prompt = tokens(20, 100);
    kv.allocate(1, prompt, 20);
    // The full group reserves 40 tokens' 10 blocks; the window group
    // ceil((8 - 1 + 8) / 4) + 1 = 5.
    QCOMPARE(kv.pool().num_free(), std::size_t{32 - 10 - 5});
    prefill(kv, 1, prompt, 0);
    for (std::uint32_t p = 20; p < 40; ++p) {
        QVERIFY(kv.can_append(1));
        kv.append(1, 300 + static_cast<TokenId>(p));
        write_both(kv, 1, 300 + static_cast<TokenId>(p), p);
        kv.check_invariants();
        // Every position the window still sees reads back.
        for (std::uint32_t q = p + 1 >= kWindow ? p + 1 - kWindow : 0; q <= p; ++q)
            QVERIFY(reads_back(kv, 1, 1, q < 20 ? prompt[q] : 300 + static_cast<TokenId>(q), q));
    }
    QVERIFY(!kv.can_append(1)); // the full group's reservation is used up
    const SequenceInfo info = kv.snapshot()->sequences.front();
    QCOMPARE(info.group_blocks, (std::vector<std::uint32_t>{10, 5}));
    const ContiguousCounterfactual c = contiguous_counterfactual(*kv.snapshot());
    QCOMPARE(c.reserved_blocks, std::size_t{15});
    kv.free(1);
    kv.check_invariants();
}

void TestKvGroups::admission_counts_the_window_cap() {
    // A 400-token prompt: the full group needs 100 blocks; the window group
    // only the first chunk's 2 now, and 5 at most over its life.
    KvCacheManager kv(hybrid_config(110));
    const auto prompt = tokens(400, 1);
    QVERIFY(!kv.never_fits(400, 0));
    QCOMPARE(kv.can_allocate(prompt, 0), AllocStatus::Ok);
    KvCacheManager whole(hybrid_config(110, AllocationMode::Paged, 0, true));
    QVERIFY(whole.never_fits(400, 0)); // 200 blocks with the window group kept whole
    kv.allocate(1, prompt, 0);
    prefill(kv, 1, prompt, 0);
    QCOMPARE(held(kv.block_table(1, 1)), std::size_t{2});
    QVERIFY(kv.pool().num_free() >= 110 - 100 - 5);
}

QTEST_APPLESS_MAIN(TestKvGroups)
#include "test_kv_groups.moc"

// KvCacheManager, case by case: the classic fragmentation example, fork and
// copy-on-write, prefix caching, swapping, refusals and the figures, and
// the contiguous counterfactual of its pools.
#include <QtTest>

#include "engine/kv/contiguous_reservation.h"

#include "kv_test_support.h"

using namespace kvscope;
using namespace kvscope::test;

class TestKvCacheManager : public QObject {
    Q_OBJECT
private slots:
    void classic_fragmentation_contiguous_fails();
    void classic_fragmentation_paged_succeeds();
    void paged_allocates_on_demand();
    void contiguous_reserves_up_front();
    void fork_shares_blocks_and_copies_on_write();
    void contiguous_fork_copies();
    void prefix_cache_reuses_full_blocks();
    void prefix_cache_keeps_last_prompt_token_uncached();
    void prefix_cache_offers_only_computed_blocks();
    void cached_free_blocks_are_evicted_lru();
    void cached_free_blocks_remember_their_last_holder();
    void swap_out_and_in_preserves_contents();
    void refusals_say_why();
    void watermark_keeps_blocks_free();
    void snapshot_describes_blocks();
    void fragmentation_figures();
    void contiguous_counterfactual_of_a_paged_pool();
    void contiguous_counterfactual_of_a_contiguous_pool_is_its_waste();
};

// A pool of 6 blocks; A takes 2, B takes 1, A is freed, C needs 4.
static void run_abc(KvCacheManager& kv, std::uint32_t bs) {
    kv.allocate(1, tokens(2 * bs, 100), 0);
    kv.allocate(2, tokens(bs, 200), 0);
    kv.free(1);
}

void TestKvCacheManager::classic_fragmentation_contiguous_fails() {
    KvCacheManager kv(config(6, 4, AllocationMode::Contiguous));
    run_abc(kv, 4);
    const auto c = tokens(16, 300);
    QCOMPARE(kv.can_allocate(c, 0), AllocStatus::Later);
    try {
        kv.allocate(3, c, 0);
        QFAIL("contiguous allocation of C should fail");
    } catch (const KvError& e) {
        const QString message = QString::fromUtf8(e.what());
        QVERIFY2(message.contains("external fragmentation"), e.what());
        QVERIFY2(message.contains("largest free run is 3"), e.what());
    }
    const FragmentationStats f = kv.fragmentation();
    QCOMPARE(f.free_blocks, std::size_t{5});
    QCOMPARE(f.largest_free_run, std::size_t{3});
    QCOMPARE(f.pending_request_blocks, std::size_t{4});
    QCOMPARE(f.external_blocks, std::size_t{5}); // no free run can serve C: all 5 free blocks are stranded
    QVERIFY(!kv.contains(3));
    kv.check_invariants();
}

void TestKvCacheManager::classic_fragmentation_paged_succeeds() {
    KvCacheManager kv(config(6, 4, AllocationMode::Paged));
    run_abc(kv, 4);
    QCOMPARE(kv.can_allocate(tokens(16, 300), 0), AllocStatus::Ok);
    kv.allocate(3, tokens(16, 300), 0);
    QCOMPARE(kv.block_table(3, 0).size(), std::size_t{4});
    QCOMPARE(kv.fragmentation().external_blocks, std::size_t{0});
    QCOMPARE(kv.fragmentation().free_blocks, std::size_t{1});
    kv.check_invariants();
}

void TestKvCacheManager::paged_allocates_on_demand() {
    KvCacheManager kv(config(8, 4, AllocationMode::Paged));
    const auto prompt = tokens(5, 1);
    kv.allocate(7, prompt, 20); // max_new_tokens reserves nothing when paged
    QCOMPARE(kv.block_table(7, 0).size(), std::size_t{2});
    write_prompt(kv, 7, prompt, 0);
    std::vector<TokenId> all = prompt;
    for (TokenId t = 50; t < 54; ++t) {
        QVERIFY(kv.can_append(7));
        const SlotRef slot = kv.append(7, t);
        write_token(kv, slot, t, static_cast<std::uint32_t>(all.size()));
        all.push_back(t);
    }
    QCOMPARE(kv.num_tokens(7), 9u);
    QCOMPARE(kv.block_table(7, 0).size(), std::size_t{3});
    QCOMPARE(first_wrong_slot(kv, 7, all), -1);
    const FragmentationStats f = kv.fragmentation();
    QCOMPARE(f.token_slots, std::size_t{9});
    QCOMPARE(f.internal_waste_slots, std::size_t{3});
    QCOMPARE(f.reserved_waste_slots, std::size_t{0});
    kv.free(7);
    QCOMPARE(kv.fragmentation().free_blocks, std::size_t{8});
    kv.check_invariants();
}

void TestKvCacheManager::contiguous_reserves_up_front() {
    KvCacheManager kv(config(8, 4, AllocationMode::Contiguous));
    kv.allocate(1, tokens(5, 1), 7); // 12 tokens -> 3 consecutive blocks
    const auto table = kv.block_table(1, 0);
    QCOMPARE(table.size(), std::size_t{3});
    QCOMPARE(table[1], table[0] + 1);
    QCOMPARE(table[2], table[0] + 2);
    const FragmentationStats f = kv.fragmentation();
    QCOMPARE(f.internal_waste_slots, std::size_t{3}); // block 2 holds 1 of 4
    QCOMPARE(f.reserved_waste_slots, std::size_t{4}); // block 3 holds nothing yet
    for (TokenId t = 0; t < 7; ++t)
        kv.append(1, t);
    QVERIFY(!kv.can_append(1));
    QVERIFY_THROWS_EXCEPTION(KvError, kv.append(1, 99));
    kv.check_invariants();
}

void TestKvCacheManager::fork_shares_blocks_and_copies_on_write() {
    KvCacheManager kv(config(8, 4, AllocationMode::Paged, false));
    const auto prompt = tokens(6, 10); // blocks: [4 full][2 of 4]
    kv.allocate(1, prompt, 0);
    write_prompt(kv, 1, prompt, 0);
    kv.fork(1, 2);
    QCOMPARE(kv.block_table(2, 0)[0], kv.block_table(1, 0)[0]);
    QCOMPARE(kv.block_table(2, 0)[1], kv.block_table(1, 0)[1]);
    QCOMPARE(kv.pool().ref_count(kv.block_table(1, 0)[1]), 2u);
    QCOMPARE(kv.fragmentation().used_blocks, std::size_t{2});

    const BlockId shared_tail = kv.block_table(1, 0)[1];
    auto a = prompt, b = prompt;
    write_token(kv, kv.append(1, 77), 77, 6); // the parent writes first: it gets the copy
    a.push_back(77);
    QVERIFY(kv.block_table(1, 0)[1] != shared_tail);
    QCOMPARE(kv.block_table(2, 0)[1], shared_tail);
    QCOMPARE(kv.block_table(2, 0)[0], kv.block_table(1, 0)[0]); // the full block stays shared
    write_token(kv, kv.append(2, 88), 88, 6); // now the child owns the old tail alone: no copy
    b.push_back(88);
    QCOMPARE(kv.block_table(2, 0)[1], shared_tail);
    QCOMPARE(first_wrong_slot(kv, 1, a), -1);
    QCOMPARE(first_wrong_slot(kv, 2, b), -1);
    QCOMPARE(kv.fragmentation().used_blocks, std::size_t{3});
    kv.check_invariants();
}

void TestKvCacheManager::contiguous_fork_copies() {
    KvCacheManager kv(config(8, 4, AllocationMode::Contiguous));
    const auto prompt = tokens(6, 10);
    kv.allocate(1, prompt, 2);
    write_prompt(kv, 1, prompt, 0);
    kv.fork(1, 2);
    QCOMPARE(kv.block_table(2, 0).size(), std::size_t{2});
    QVERIFY(kv.block_table(2, 0)[0] != kv.block_table(1, 0)[0]);
    QCOMPARE(first_wrong_slot(kv, 2, prompt), -1);
    QCOMPARE(kv.fragmentation().used_blocks, std::size_t{4});
    kv.check_invariants();
}

void TestKvCacheManager::prefix_cache_reuses_full_blocks() {
    KvCacheManager kv(config(16, 4, AllocationMode::Paged));
    auto system = tokens(8, 1000); // two full blocks of shared "system prompt"
    auto p1 = system, p2 = system;
    p1.insert(p1.end(), {1, 2, 3});
    p2.insert(p2.end(), {4, 5});
    QCOMPARE(kv.allocate(1, p1, 4), 0u);
    write_prompt(kv, 1, p1, 0);
    QCOMPARE(kv.allocate(2, p2, 4), 8u); // both system blocks come from the cache
    write_prompt(kv, 2, p2, 8);          // the runner computes only the rest
    QCOMPARE(kv.block_table(2, 0)[0], kv.block_table(1, 0)[0]);
    QCOMPARE(kv.block_table(2, 0)[1], kv.block_table(1, 0)[1]);
    QVERIFY(kv.block_table(2, 0)[2] != kv.block_table(1, 0)[2]);
    QCOMPARE(first_wrong_slot(kv, 2, p2), -1); // the shared K/V are really p2's
    const auto snap = kv.snapshot();
    QCOMPARE(snap->blocks[kv.block_table(1, 0)[0]].state, BlockState::Shared);
    QCOMPARE(snap->prefix_hit_tokens, std::uint64_t{8});
    QCOMPARE(snap->prefix_query_tokens, std::uint64_t{p1.size() + p2.size()});

    // Freed, the full blocks stay cached; a third request still hits them.
    kv.free(1);
    kv.free(2);
    QCOMPARE(kv.fragmentation().cached_free_blocks, std::size_t{2});
    QCOMPARE(kv.allocate(3, p1, 0), 8u);
    QCOMPARE(first_wrong_slot(kv, 3, std::vector<TokenId>(p1.begin(), p1.begin() + 8)), -1);
    kv.check_invariants();
}

void TestKvCacheManager::prefix_cache_keeps_last_prompt_token_uncached() {
    KvCacheManager kv(config(16, 4, AllocationMode::Paged));
    const auto prompt = tokens(8, 1);
    kv.allocate(1, prompt, 0);
    kv.cover(1, 8);
    // Same 8 tokens: only the first block may come from the cache, so the
    // 8th token still runs through the model and yields logits.
    QCOMPARE(kv.allocate(2, prompt, 0), 4u);
    kv.check_invariants();
}

// A block joins the prefix cache when its K/V are computed, not when its
// tokens are known: a prompt admitted while another with the same start is
// still being prefilled (or after that one was preempted part way) must
// not take blocks nobody has written.
void TestKvCacheManager::prefix_cache_offers_only_computed_blocks() {
    KvCacheManager kv(config(32, 4, AllocationMode::Paged));
    const auto prompt = tokens(21, 1);
    kv.allocate(1, prompt, 0);
    QCOMPARE(kv.allocate(2, prompt, 0), 0u); // nothing computed yet
    kv.cover(1, 10);                  // blocks 0 and 1 are; 2 is half
    QCOMPARE(kv.allocate(3, prompt, 0), 8u);
    kv.free(1); // preempted part way: its uncomputed blocks are plain free
    QCOMPARE(kv.fragmentation().cached_free_blocks, std::size_t{0}); // 0 and 1 are held by 3
    kv.free(3);
    QCOMPARE(kv.fragmentation().cached_free_blocks, std::size_t{2});
    QCOMPARE(kv.allocate(4, prompt, 0), 8u);
    kv.check_invariants();
}

void TestKvCacheManager::cached_free_blocks_are_evicted_lru() {
    KvCacheManager kv(config(4, 2, AllocationMode::Paged));
    kv.allocate(1, std::vector<TokenId>{1, 2, 9}, 0); // block [1,2] full + cached once computed
    kv.cover(1, 3);
    kv.allocate(2, std::vector<TokenId>{3, 4, 9}, 0); // block [3,4] full + cached
    kv.cover(2, 3);
    kv.free(1);                    // [1,2] becomes cached-free first...
    kv.free(2);                    // ...then [3,4]
    QCOMPARE(kv.fragmentation().cached_free_blocks, std::size_t{2});
    // Three fresh blocks: the two plain free blocks, then the least recently
    // freed cached block ([1,2]) is evicted.
    kv.allocate(3, tokens(6, 500), 0);
    QCOMPARE(kv.fragmentation().cached_free_blocks, std::size_t{1});
    kv.free(3);
    QCOMPARE(kv.allocate(4, std::vector<TokenId>{3, 4, 7}, 0), 2u); // [3,4] survived
    QCOMPARE(kv.allocate(5, std::vector<TokenId>{1, 2, 7}, 0), 0u); // [1,2] did not
    kv.check_invariants();
}

// A block map colours a finished chat's cached blocks by the sequence that
// held them last: set when a block becomes cached-free, cleared when a
// prefix hit revives it or an allocation evicts it.
void TestKvCacheManager::cached_free_blocks_remember_their_last_holder() {
    KvCacheManager kv(config(4, 2, AllocationMode::Paged));
    kv.allocate(1, std::vector<TokenId>{1, 2, 9}, 0); // [1,2] full, [9] partial
    kv.cover(1, 3);
    const BlockId full = kv.block_table(1, 0)[0], partial = kv.block_table(1, 0)[1];
    QCOMPARE(kv.snapshot()->blocks[full].last_holder, std::nullopt); // held: owners say who
    kv.free(1);
    auto snap = kv.snapshot();
    QCOMPARE(snap->blocks[full].state, BlockState::CachedFree);
    QCOMPARE(snap->blocks[full].last_holder, std::optional<SeqId>(1));
    QCOMPARE(snap->blocks[partial].last_holder, std::nullopt); // plain free: nothing kept
    QCOMPARE(kv.pool().cached_blocks_of(1), 1u);

    // Revived by a prefix hit, then released by its new holder.
    QCOMPARE(kv.allocate(2, std::vector<TokenId>{1, 2, 5}, 0), 2u);
    QCOMPARE(kv.snapshot()->blocks[full].last_holder, std::nullopt);
    QCOMPARE(kv.pool().cached_blocks_of(1), 0u);
    kv.free(2);
    QCOMPARE(kv.snapshot()->blocks[full].last_holder, std::optional<SeqId>(2));
    kv.check_invariants();

    // Evicted: all four blocks go to a new sequence.
    kv.allocate(3, tokens(8, 100), 0);
    snap = kv.snapshot();
    for (const BlockInfo& b : snap->blocks)
        QCOMPARE(b.last_holder, std::nullopt);
    QCOMPARE(kv.pool().cached_blocks_of(2), 0u);
    kv.check_invariants();
}

void TestKvCacheManager::swap_out_and_in_preserves_contents() {
    for (AllocationMode mode : {AllocationMode::Paged, AllocationMode::Contiguous}) {
        KvCacheManager kv(config(8, 4, mode, true, 4));
        const auto prompt = tokens(7, 40);
        kv.allocate(1, prompt, 1);
        write_prompt(kv, 1, prompt, 0);
        QVERIFY(kv.can_swap_out(1));
        kv.swap_out(1);
        QCOMPARE(kv.fragmentation().free_blocks, std::size_t{8});
        QCOMPARE(kv.snapshot()->swap_blocks_used, 2u);
        QVERIFY(!kv.can_append(1));
        kv.allocate(2, tokens(12, 90), 0); // something else moves into the freed blocks
        QCOMPARE(kv.can_swap_in(1), AllocStatus::Ok);
        kv.swap_in(1);
        QCOMPARE(first_wrong_slot(kv, 1, prompt), -1);
        QCOMPARE(kv.snapshot()->swap_blocks_used, 0u);
        kv.append(1, 5);
        kv.check_invariants();
    }
}

void TestKvCacheManager::refusals_say_why() {
    KvCacheManager kv(config(4, 4, AllocationMode::Paged));
    QCOMPARE(kv.can_allocate(tokens(10, 1), 7), AllocStatus::Never); // 17 tokens > 16 slots
    const std::optional<KvRefusal> never = kv.refusal(tokens(10, 1), 7);
    QVERIFY(never);
    QCOMPARE(never->status, AllocStatus::Never);
    QCOMPARE(never->prompt_tokens, std::size_t{10});
    QCOMPARE(never->max_new_tokens, std::size_t{7});
    QCOMPARE(never->blocks_needed, std::size_t{5});
    QCOMPARE(never->total_blocks, std::size_t{4});
    QVERIFY2(QString::fromStdString(never->reason).contains("never fit"), never->reason.c_str());
    QVERIFY(!kv.refusal(tokens(10, 1), 6)); // 16 tokens fit
    try {
        kv.allocate(1, tokens(10, 1), 7);
        QFAIL("should never fit");
    } catch (const KvError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains("never fit"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(KvError, kv.allocate(1, {}, 4));
    kv.allocate(1, tokens(12, 1), 0);
    const std::optional<KvRefusal> later = kv.refusal(tokens(8, 100), 0);
    QVERIFY(later);
    QCOMPARE(later->status, AllocStatus::Later);
    QCOMPARE(later->blocks_needed, std::size_t{2});
    QCOMPARE(later->free_blocks, std::size_t{1});
    try {
        kv.allocate(2, tokens(8, 100), 0);
        QFAIL("should not fit now");
    } catch (const KvError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains("only 1 of 4 are free"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(KvError, kv.allocate(1, tokens(1, 1), 0)); // id taken
    QVERIFY_THROWS_EXCEPTION(KvError, kv.append(42, 1));                 // unknown id
    QVERIFY_THROWS_EXCEPTION(KvError, kv.swap_out(1));                   // no swap pool
    QVERIFY_THROWS_EXCEPTION(KvError, KvCacheManager(config(0, 4, AllocationMode::Paged)));
    kv.check_invariants();
}

void TestKvCacheManager::watermark_keeps_blocks_free() {
    KvCacheConfig c = config(100, 4, AllocationMode::Paged);
    c.watermark = 0.05; // 5 blocks
    KvCacheManager kv(c);
    QCOMPARE(kv.can_allocate(tokens(4 * 95, 1), 0), AllocStatus::Ok);
    QCOMPARE(kv.can_allocate(tokens(4 * 96, 1), 0), AllocStatus::Never);
    kv.allocate(1, tokens(4 * 90, 1), 0);
    QCOMPARE(kv.can_allocate(tokens(4 * 6, 1000), 0), AllocStatus::Later);
    QCOMPARE(kv.can_allocate(tokens(4 * 5, 1000), 0), AllocStatus::Ok);
}

void TestKvCacheManager::snapshot_describes_blocks() {
    KvCacheManager kv(config(6, 4, AllocationMode::Paged));
    kv.allocate(1, tokens(6, 1), 0);
    kv.fork(1, 2);
    kv.allocate(3, tokens(4, 50), 0);
    kv.allocate(4, std::vector<TokenId>{7, 7, 7, 7, 7}, 0);
    kv.cover(4, 5);
    kv.free(4); // its full block stays cached
    const auto snap = kv.snapshot();
    const auto t1 = kv.block_table(1, 0);
    QCOMPARE(snap->blocks[t1[0]].state, BlockState::Shared);
    QCOMPARE(snap->blocks[t1[1]].fill, std::uint16_t{2});
    QCOMPARE(snap->blocks[t1[1]].ref_count, 2u);
    QCOMPARE(std::vector<SeqId>(snap->owners_of(t1[1]).begin(), snap->owners_of(t1[1]).end()),
             (std::vector<SeqId>{1, 2}));
    QCOMPARE(snap->blocks[kv.block_table(3, 0)[0]].state, BlockState::Used);
    int cached = 0, free_blocks = 0;
    for (const BlockInfo& b : snap->blocks) {
        cached += b.state == BlockState::CachedFree;
        free_blocks += b.state == BlockState::Free;
    }
    QCOMPARE(cached, 1);
    QCOMPARE(free_blocks, 2);
    QCOMPARE(snap->sequences.size(), std::size_t{3});
    QCOMPARE(snap->sequences[0].id, SeqId{1});
    QCOMPARE(snap->sequences[0].internal_waste_slots, std::size_t{2});
}

void TestKvCacheManager::fragmentation_figures() {
    // Blocks of 4 slots: [used 4][used 1][reserved][free][free][used 3][free]
    using S = BlockState;
    const std::vector<BlockInfo> blocks{{S::Used, 4, 1}, {S::Used, 1, 1}, {S::Reserved, 0, 1}, {S::Free, 0, 0},
                                        {S::Free, 0, 0}, {S::Used, 3, 1}, {S::Free, 0, 0}};
    const FragmentationStats c = compute_fragmentation(blocks, 4, AllocationMode::Contiguous, 3);
    QCOMPARE(c.token_slots, std::size_t{8});
    QCOMPARE(c.internal_waste_slots, std::size_t{3 + 1});
    QCOMPARE(c.reserved_waste_slots, std::size_t{4});
    QCOMPARE(c.free_blocks, std::size_t{3});
    QCOMPARE(c.largest_free_run, std::size_t{2});
    QCOMPARE(c.external_blocks, std::size_t{3}); // a 3-block request fits in neither hole
    QCOMPARE(c.token_occupancy(), 8.0 / 28.0);
    QCOMPARE(c.block_occupancy(), 4.0 / 7.0);
    // Without a pending request: the single free block outside the largest run.
    QCOMPARE(compute_fragmentation(blocks, 4, AllocationMode::Contiguous, 0).external_blocks, std::size_t{1});
    QCOMPARE(compute_fragmentation(blocks, 4, AllocationMode::Paged, 3).external_blocks, std::size_t{0});
}

void TestKvCacheManager::contiguous_counterfactual_of_a_paged_pool() {
    // Block size 4: A (5 prompt + 6 new) holds 2 blocks paged, a contiguous
    // allocator would reserve 3; B (4 + 0) fills its one block; C is swapped
    // out and holds no pool memory.
    KvCacheManager kv(config(8, 4, AllocationMode::Paged, false, 4));
    kv.allocate(1, tokens(5, 10), 6);
    kv.allocate(2, tokens(4, 20), 0);
    kv.allocate(3, tokens(3, 30), 9);
    kv.swap_out(3);
    const ContiguousCounterfactual c = contiguous_counterfactual(*kv.snapshot());
    QCOMPARE(c.sequences, std::size_t{2});
    QCOMPARE(c.token_slots, std::size_t{9});
    QCOMPARE(c.internal_waste_slots, std::size_t{3}); // A's second block
    QCOMPARE(c.reserved_waste_slots, std::size_t{4}); // A's third block
    QCOMPARE(c.reserved_blocks, std::size_t{4});
    QCOMPARE(c.pool_blocks, std::size_t{8});
    QCOMPARE(c.reserved_waste(), 4.0 / 32);
    QVERIFY(c.fits());
    // Paged, the same sequences reserve nothing.
    QCOMPARE(kv.fragmentation().reserved_waste_slots, std::size_t{0});
}

void TestKvCacheManager::contiguous_counterfactual_of_a_contiguous_pool_is_its_waste() {
    // The allocator and the counterfactual follow one policy: on a
    // contiguous pool they agree slot for slot.
    KvCacheManager kv(config(16, 4, AllocationMode::Contiguous));
    kv.allocate(1, tokens(5, 10), 6);
    kv.allocate(2, tokens(9, 20), 13);
    kv.append(1, 99);
    const auto s = kv.snapshot();
    const ContiguousCounterfactual c = contiguous_counterfactual(*s);
    QCOMPARE(c.internal_waste_slots, s->fragmentation.internal_waste_slots);
    QCOMPARE(c.reserved_waste_slots, s->fragmentation.reserved_waste_slots);
    QCOMPARE(c.reserved_blocks, s->fragmentation.used_blocks);
    QCOMPARE(c.reserved_blocks, std::size_t{3 + 6});
}

QTEST_APPLESS_MAIN(TestKvCacheManager)
#include "test_kv_cache_manager.moc"

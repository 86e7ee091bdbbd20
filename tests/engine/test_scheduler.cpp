// The scheduler without a model: a loop that "computes" each chunk and
// appends a token wherever one would be sampled.
#include <QtTest>

#include "engine/sched/scheduler.h"

using namespace kvscope;

namespace {

KvCacheManager cache(std::uint32_t blocks, std::uint32_t block_size, AllocationMode mode = AllocationMode::Paged,
                     std::uint32_t swap_blocks = 0) {
    return KvCacheManager({KvLayout({1, 1, 8}, KvDtype::F16, block_size), blocks, mode, false, swap_blocks, 0.0});
}

SchedSeq seq(SeqId id, std::size_t prompt, std::uint32_t max_new, std::uint64_t arrival) {
    return {id, std::vector<TokenId>(prompt, static_cast<TokenId>(id)), static_cast<std::uint32_t>(prompt) + max_new,
            0, SeqStatus::Waiting, arrival};
}

// Runs a schedule as an engine would: chunks computed, samples appended.
void run(Scheduler& s, const Schedule& sched) {
    for (const ScheduledChunk& c : sched.chunks) {
        s.mark_computed(c.seq, c.start + c.count);
        if (c.samples)
            s.append_token(c.seq, 7);
    }
}

} // namespace

class TestScheduler : public QObject {
    Q_OBJECT
private slots:
    void chunked_prefill_respects_the_token_budget();
    void decodes_come_first();
    void recompute_preempts_the_youngest_and_resumes_it();
    void swap_preempts_and_resumes();
    void fcfs_head_of_line_waits();
    void never_fitting_requests_are_rejected();
    void max_num_seqs_limits_admission();
};

void TestScheduler::chunked_prefill_respects_the_token_budget() {
    KvCacheManager kv = cache(16, 4);
    Scheduler s({8, 8, PreemptionMode::Recompute}, kv);
    s.add(seq(1, 20, 4, 0));
    std::vector<std::uint32_t> counts;
    for (int i = 0; i < 3; ++i) {
        const Schedule sched = s.schedule();
        QCOMPARE(sched.chunks.size(), std::size_t{1});
        counts.push_back(sched.chunks[0].count);
        QCOMPARE(sched.chunks[0].samples, i == 2);
        run(s, sched);
    }
    QCOMPARE(counts, (std::vector<std::uint32_t>{8, 8, 4}));
    const Schedule decode = s.schedule();
    QCOMPARE(decode.chunks[0].start, 20u);
    QCOMPARE(decode.chunks[0].count, 1u);
}

void TestScheduler::decodes_come_first() {
    KvCacheManager kv = cache(16, 4);
    Scheduler s({8, 6, PreemptionMode::Recompute}, kv);
    s.add(seq(1, 3, 8, 0));
    run(s, s.schedule()); // 1 prefilled, sampled
    s.add(seq(2, 10, 4, 1));
    const Schedule sched = s.schedule();
    QCOMPARE(sched.chunks.size(), std::size_t{2});
    QCOMPARE(sched.chunks[0].seq, SeqId{1}); // the decode
    QCOMPARE(sched.chunks[1].seq, SeqId{2});
    QCOMPARE(sched.chunks[1].count, 5u); // the budget left
}

void TestScheduler::recompute_preempts_the_youngest_and_resumes_it() {
    KvCacheManager kv = cache(4, 2); // 8 slots
    Scheduler s({8, 64, PreemptionMode::Recompute}, kv);
    s.add(seq(1, 3, 5, 0)); // both fit at admission (2 blocks each)...
    s.add(seq(2, 3, 5, 1));
    run(s, s.schedule());
    std::uint64_t preempted = 0;
    for (int step = 0; step < 40 && s.has_work(); ++step) {
        const Schedule sched = s.schedule();
        preempted += sched.preempted.size();
        for (SeqId p : sched.preempted)
            QCOMPARE(p, SeqId{2}); // ...but growing, the younger one makes room
        run(s, sched);
        for (SeqId id : {SeqId{1}, SeqId{2}})
            if (s.contains(id) && s.seq(id).tokens.size() >= s.seq(id).max_tokens)
                s.remove(id);
    }
    QVERIFY(preempted > 0);
    QCOMPARE(s.preemptions(), preempted);
    QVERIFY(!s.has_work()); // both finished: the preempted one was resumed
    QCOMPARE(kv.fragmentation().free_blocks, std::size_t{4});
}

void TestScheduler::swap_preempts_and_resumes() {
    KvCacheManager kv = cache(4, 2, AllocationMode::Paged, 4);
    Scheduler s({8, 64, PreemptionMode::Swap}, kv);
    s.add(seq(1, 3, 5, 0));
    s.add(seq(2, 3, 5, 1));
    run(s, s.schedule());
    bool saw_swapped = false;
    for (int step = 0; step < 40 && s.has_work(); ++step) {
        run(s, s.schedule());
        saw_swapped |= s.num_swapped() > 0;
        for (SeqId id : {SeqId{1}, SeqId{2}})
            if (s.contains(id) && s.seq(id).tokens.size() >= s.seq(id).max_tokens)
                s.remove(id);
    }
    QVERIFY(saw_swapped);
    QVERIFY(!s.has_work());
    kv.check_invariants();
}

void TestScheduler::fcfs_head_of_line_waits() {
    KvCacheManager kv = cache(4, 4);
    Scheduler s({8, 64, PreemptionMode::Recompute}, kv);
    s.add(seq(1, 8, 0, 0)); // 2 blocks
    run(s, s.schedule());
    s.add(seq(2, 12, 0, 1)); // needs 3: must wait
    s.add(seq(3, 2, 0, 2));  // would fit, but may not overtake 2
    const Schedule sched = s.schedule();
    QCOMPARE(s.num_waiting(), std::size_t{2});
    for (const auto& c : sched.chunks)
        QVERIFY(c.seq != 3);
}

void TestScheduler::never_fitting_requests_are_rejected() {
    KvCacheManager kv = cache(4, 4);
    Scheduler s({8, 64, PreemptionMode::Recompute}, kv);
    s.add(seq(1, 10, 10, 0)); // 20 tokens > 16 slots
    s.add(seq(2, 4, 4, 1));
    const Schedule sched = s.schedule();
    QCOMPARE(sched.rejected.size(), std::size_t{1});
    QCOMPARE(sched.rejected[0].first, SeqId{1});
    QVERIFY2(QString::fromStdString(sched.rejected[0].second).contains("never fit"), sched.rejected[0].second.c_str());
    QVERIFY(!s.contains(1));
    QCOMPARE(sched.chunks.size(), std::size_t{1}); // 2 is unaffected
}

void TestScheduler::max_num_seqs_limits_admission() {
    KvCacheManager kv = cache(64, 4);
    Scheduler s({2, 64, PreemptionMode::Recompute}, kv);
    for (SeqId id = 1; id <= 4; ++id)
        s.add(seq(id, 3, 3, id));
    s.schedule();
    QCOMPARE(s.num_running(), std::size_t{2});
    QCOMPARE(s.num_waiting(), std::size_t{2});
}

QTEST_APPLESS_MAIN(TestScheduler)
#include "test_scheduler.moc"

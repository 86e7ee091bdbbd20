// The scheduler without a model: a loop that "computes" each chunk and
// appends a token wherever one would be sampled.
#include <QtTest>

#include "engine/core/error.h"
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

SchedSeq with_priority(SchedSeq s, std::int32_t priority) {
    s.priority = priority;
    return s;
}

constexpr std::int32_t kInteractive = 0;
constexpr std::int32_t kBackground = 1;

std::vector<SeqId> scheduled(const Schedule& sched) {
    std::vector<SeqId> ids;
    for (const ScheduledChunk& c : sched.chunks)
        ids.push_back(c.seq);
    return ids;
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
    void never_fitting_sequences_are_not_added();
    void max_num_seqs_limits_admission();
    void priority_admits_a_later_interactive_request_first();
    void priority_preempts_the_lowest_priority_latest_arrival();
    void priority_preempts_background_to_admit_an_interactive_request();
    void scheduling_policy_words();
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

void TestScheduler::never_fitting_sequences_are_not_added() {
    KvCacheManager kv = cache(4, 4);
    Scheduler s({8, 64, PreemptionMode::Recompute}, kv);
    try {
        s.add(seq(1, 10, 10, 0)); // 20 tokens > 16 slots
        QFAIL("a sequence that can never fit was added");
    } catch (const KvError& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains("never fit"), e.what());
    }
    QVERIFY(!s.contains(1));
    s.add(seq(2, 4, 4, 1));
    const Schedule sched = s.schedule();
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

// Background requests 1 and 2 arrive first; interactive 3 after them. One
// may run at a time.
void TestScheduler::priority_admits_a_later_interactive_request_first() {
    for (const SchedulingPolicy policy : {SchedulingPolicy::Fcfs, SchedulingPolicy::Priority}) {
        KvCacheManager kv = cache(64, 4);
        Scheduler s({1, 64, PreemptionMode::Recompute, policy}, kv);
        s.add(with_priority(seq(1, 3, 3, 0), kBackground));
        s.add(with_priority(seq(2, 3, 3, 1), kBackground));
        s.add(with_priority(seq(3, 3, 3, 2), kInteractive));
        const SeqId first = policy == SchedulingPolicy::Priority ? 3 : 1;
        QCOMPARE(scheduled(s.schedule()), std::vector<SeqId>{first});
        QCOMPARE(s.waiting_queue().size(), std::size_t{2});
        QCOMPARE(s.waiting_queue().front(), policy == SchedulingPolicy::Priority ? SeqId{1} : SeqId{2});
    }
}

// Three sequences of one block each grow into a pool of six: at their fifth
// token one must go. FCFS preempts the most recently admitted (the
// interactive 3); Priority the background sequence that arrived last (2).
void TestScheduler::priority_preempts_the_lowest_priority_latest_arrival() {
    for (const SchedulingPolicy policy : {SchedulingPolicy::Fcfs, SchedulingPolicy::Priority}) {
        KvCacheManager kv = cache(6, 2);
        Scheduler s({8, 64, PreemptionMode::Recompute, policy}, kv);
        s.add(with_priority(seq(1, 2, 8, 0), kBackground));
        s.add(with_priority(seq(2, 2, 8, 1), kBackground));
        s.add(with_priority(seq(3, 2, 8, 2), kInteractive));
        std::vector<SeqId> preempted;
        for (int step = 0; step < 4 && preempted.empty(); ++step) {
            const Schedule sched = s.schedule();
            preempted = sched.preempted;
            run(s, sched);
        }
        QCOMPARE(preempted, std::vector<SeqId>{policy == SchedulingPolicy::Priority ? SeqId{2} : SeqId{3}});
        kv.check_invariants();
    }
}

// Two background sequences fill max_num_seqs; an interactive one arrives.
// Priority preempts the later background sequence before anyone decodes
// and admits the interactive one in the same step; FCFS lets it wait.
void TestScheduler::priority_preempts_background_to_admit_an_interactive_request() {
    for (const SchedulingPolicy policy : {SchedulingPolicy::Fcfs, SchedulingPolicy::Priority}) {
        KvCacheManager kv = cache(64, 4, AllocationMode::Paged, 64);
        Scheduler s({2, 64, PreemptionMode::Swap, policy}, kv);
        s.add(with_priority(seq(1, 3, 8, 0), kBackground));
        s.add(with_priority(seq(2, 3, 8, 1), kBackground));
        run(s, s.schedule());
        s.add(with_priority(seq(3, 3, 8, 2), kInteractive));
        const Schedule sched = s.schedule();
        run(s, sched);
        if (policy == SchedulingPolicy::Fcfs) {
            QCOMPARE(scheduled(sched), (std::vector<SeqId>{1, 2}));
            QCOMPARE(s.waiting_queue().front(), SeqId{3});
            continue;
        }
        QCOMPARE(sched.preempted, std::vector<SeqId>{2});
        QCOMPARE(scheduled(sched), (std::vector<SeqId>{1, 3}));
        QCOMPARE(s.seq(2).status, SeqStatus::Swapped);
        // Once 3 is done, 2 comes back.
        s.remove(3);
        run(s, s.schedule());
        QCOMPARE(s.seq(2).status, SeqStatus::Running);
        kv.check_invariants();
    }
}

void TestScheduler::scheduling_policy_words() {
    for (const SchedulingPolicy policy : {SchedulingPolicy::Fcfs, SchedulingPolicy::Priority})
        QCOMPARE(parse_scheduling_policy(to_string(policy)), policy);
    QVERIFY_THROWS_EXCEPTION(Error, parse_scheduling_policy("lifo"));
}

QTEST_APPLESS_MAIN(TestScheduler)
#include "test_scheduler.moc"

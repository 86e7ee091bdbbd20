// The kernels' one parallel loop (parallel_for.h): every index runs exactly
// once whatever the sizes, thread counts and schedule, and with the Even
// schedule a thread done with its own range takes work from a slow one.
#include <QTest>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "kernels/cpu/parallel_for.h"
#include "support/wait.h"

using namespace kvscope::kernels::cpu::detail;

Q_DECLARE_METATYPE(kvscope::kernels::cpu::detail::Schedule)

class TestParallelFor : public QObject {
    Q_OBJECT

private slots:
    void range_hands_out_each_index_once();
    void range_ends_race_without_overlap();
    void every_index_once_data();
    void every_index_once();
    void a_finished_thread_takes_a_slow_ones_work();
};

namespace {

// Takes everything from the range, from the front or the back.
std::vector<std::pair<std::size_t, std::size_t>> drain(StealableRange& range, bool front) {
    std::vector<std::pair<std::size_t, std::size_t>> chunks;
    std::size_t begin, end;
    while (front ? range.take_front(begin, end) : range.take_back(begin, end))
        chunks.emplace_back(begin, end);
    return chunks;
}

} // namespace

void TestParallelFor::range_hands_out_each_index_once() {
    StealableRange range;
    range.reset(10, 47, 5);
    std::size_t begin, end;
    QVERIFY(range.take_front(begin, end));
    QCOMPARE(begin, std::size_t{10}); // the owner's chunks run forwards from the start
    QCOMPARE(end, std::size_t{15});
    QVERIFY(range.take_back(begin, end));
    QCOMPARE(begin, std::size_t{42}); // a thief's backwards from the end
    QCOMPARE(end, std::size_t{47});
    const auto rest = drain(range, true);
    QCOMPARE(rest.front(), std::make_pair(std::size_t{15}, std::size_t{20}));
    QCOMPARE(rest.back(), std::make_pair(std::size_t{40}, std::size_t{42})); // the last chunk is cut short
    QVERIFY(drain(range, false).empty());
    range.reset(3, 3, 1); // empty
    QVERIFY(!range.take_front(begin, end) && !range.take_back(begin, end));
}

void TestParallelFor::range_ends_race_without_overlap() {
    constexpr std::size_t n = 200000;
    StealableRange range;
    range.reset(0, n, 1);
    std::vector<std::atomic<int>> taken(n);
    auto take_all = [&](bool front) {
        for (const auto& [begin, end] : drain(range, front))
            for (std::size_t i = begin; i < end; ++i)
                taken[i].fetch_add(1);
    };
    std::thread thief(take_all, false);
    take_all(true);
    thief.join();
    for (std::size_t i = 0; i < n; ++i)
        if (taken[i].load() != 1)
            QFAIL(qPrintable(QStringLiteral("index %1 taken %2 times").arg(i).arg(taken[i].load())));
}

void TestParallelFor::every_index_once_data() {
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("threads");
    QTest::addColumn<Schedule>("schedule");
    for (const Schedule schedule : {Schedule::Even, Schedule::Dynamic})
        for (const int threads : {1, 2, 3, 8})
            for (const int n : {0, 1, 2, 3, 17, 1000, 4097}) {
                const auto name = QStringLiteral("%1 n=%2 threads=%3")
                                      .arg(schedule == Schedule::Even ? "even" : "dynamic")
                                      .arg(n)
                                      .arg(threads);
                QTest::newRow(qPrintable(name)) << n << threads << schedule;
            }
}

void TestParallelFor::every_index_once() {
    QFETCH(int, n);
    QFETCH(int, threads);
    QFETCH(Schedule, schedule);
    for (int round = 0; round < 20; ++round) { // the ranges are reused from call to call
        std::vector<std::atomic<int>> runs(static_cast<std::size_t>(n));
        std::atomic<int> bad_thread{0};
        parallel_for(static_cast<std::size_t>(n), threads, schedule, [&](std::size_t i, int thread) {
            runs[i].fetch_add(1);
            if (thread < 0 || thread >= threads)
                bad_thread.fetch_add(1);
        });
        QCOMPARE(bad_thread.load(), 0);
        for (int i = 0; i < n; ++i)
            QCOMPARE(runs[static_cast<std::size_t>(i)].load(), 1);
    }
}

// Thread 0 stops on its first index until thread 1 has run an index of
// thread 0's range, which it can only do by taking it from the back after
// finishing its own. A worker the OS does not start within the timeout
// proves nothing either way.
void TestParallelFor::a_finished_thread_takes_a_slow_ones_work() {
    constexpr std::size_t n = 64; // thread 0 owns [0, 32), thread 1 [32, 64)
    std::atomic<bool> worker_started{false}, helped{false}, timed_out{false};
    parallel_for(n, 2, Schedule::Even, [&](std::size_t i, int thread) {
        if (thread == 1) {
            if (!timed_out.load())
                worker_started.store(true);
            if (i < n / 2)
                helped.store(true);
        } else if (i == 0) {
            timed_out.store(!kvscope::test::wait_until([&] { return helped.load(); }, std::chrono::seconds(10)));
        }
    });
    if (!worker_started.load())
        QSKIP("the worker thread did not start within 10 s");
    QVERIFY(helped.load());
}

QTEST_APPLESS_MAIN(TestParallelFor)
#include "test_parallel_for.moc"

// kernels/cpu/cpu_topology.h: the default kernel thread count. Everywhere:
// at least 1 and no more than the hardware threads (the fallback). On
// Linux: the affinity mask, shown by pinning this thread to one CPU.
#include <QtTest>

#if defined(__linux__)
#include <sched.h>
#endif

#include <thread>

#include "kernels/cpu/cpu_topology.h"

using namespace kvscope::kernels::cpu;

class TestCpuTopology : public QObject {
    Q_OBJECT

private slots:
    void within_the_hardware_threads();
    void follows_the_affinity_mask();
};

void TestCpuTopology::within_the_hardware_threads() {
    const int fallback = detail::hardware_thread_count();
    QVERIFY(fallback >= 1);
    QVERIFY(fallback >= static_cast<int>(std::thread::hardware_concurrency()));
    const int threads = default_thread_count();
    QVERIFY2(threads >= 1 && threads <= fallback, qPrintable(QStringLiteral("%1 of %2").arg(threads).arg(fallback)));
}

void TestCpuTopology::follows_the_affinity_mask() {
#if defined(__linux__)
    cpu_set_t all;
    CPU_ZERO(&all);
    QCOMPARE(::sched_getaffinity(0, sizeof all, &all), 0);
    QCOMPARE(default_thread_count(), CPU_COUNT(&all));
    int first = 0;
    while (!CPU_ISSET(first, &all))
        ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    QCOMPARE(::sched_setaffinity(0, sizeof one, &one), 0);
    const int pinned = default_thread_count();
    QCOMPARE(::sched_setaffinity(0, sizeof all, &all), 0);
    QCOMPARE(pinned, 1);
#else
    QSKIP("affinity masks are Linux's (macOS counts its performance cores)");
#endif
}

QTEST_GUILESS_MAIN(TestCpuTopology)
#include "test_cpu_topology.moc"

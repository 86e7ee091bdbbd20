// tests/support/process_memory.h, the measurements other tests bound memory
// with: getrusage's peak (the POSIX fallback, whose unit differs between
// systems) is in bytes, and a peak measured around 64 MiB being touched
// sees them, by the fallback and by this system's own way.
#include <QtTest>

#include <memory>

#include "support/process_memory.h"

using kvscope::test::PeakResident;

namespace {

constexpr std::size_t kTouched = std::size_t{64} << 20;

// Volatile stores, which the compiler may not drop with the block: one
// every 1 KiB reaches every page whatever the page size.
void touch_and_free() {
    const auto block = std::make_unique<char[]>(kTouched);
    volatile char* bytes = block.get();
    for (std::size_t i = 0; i < kTouched; i += 1024)
        bytes[i] = 1;
}

} // namespace

class TestProcessMemory : public QObject {
    Q_OBJECT

private slots:
    void rusage_peak_is_in_bytes();
    void a_peak_sees_what_was_touched_data();
    void a_peak_sees_what_was_touched();
};

// The peak since the start is at least what is resident now, and of its
// order: the fallback's unit (KiB on Linux, bytes on macOS) is converted
// right (a wrong one is 1024 times off).
void TestProcessMemory::rusage_peak_is_in_bytes() {
    const std::optional<std::size_t> now = kvscope::test::resident_bytes();
    if (!now)
        QSKIP("no current resident size here to compare the peak with");
    const std::size_t peak = kvscope::test::peak_resident_bytes_since_start();
    QVERIFY2(peak >= *now - *now / 10 && peak < 64 * *now,
             qPrintable(QStringLiteral("peak %1, now %2 bytes").arg(peak).arg(*now)));
}

// Both ways of measuring a peak see 64 MiB touched: this system's (VmHWM
// after a reset on Linux) and the fallback (getrusage's peak rising). The
// fallback runs first, while the process has never held as much.
void TestProcessMemory::a_peak_sees_what_was_touched_data() {
    QTest::addColumn<bool>("fallback");
    QTest::newRow("getrusage") << true;
    QTest::newRow("this system's") << false;
}

void TestProcessMemory::a_peak_sees_what_was_touched() {
    QFETCH(bool, fallback);
    const PeakResident peak = fallback ? kvscope::test::detail::peak_resident_during_by_rusage(touch_and_free)
                                       : kvscope::test::peak_resident_during(touch_and_free);
    QVERIFY2(peak.at_most >= kTouched, qPrintable(QString::number(peak.at_most)));
    QVERIFY(peak.exact || !fallback); // the fallback's first 64 MiB is a new peak
}

QTEST_GUILESS_MAIN(TestProcessMemory)
#include "test_process_memory.moc"

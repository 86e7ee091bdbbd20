// cpu_features() (CPUID + XGETBV) against the kernel's own view of the CPU:
// the flags line of /proc/cpuinfo, which Linux fills from the same CPUID
// bits and clears for features whose registers it does not save.
#include <QFile>
#include <QSet>
#include <QTest>

#include "kernels/cpu/cpu_features.h"

using kvscope::kernels::cpu::cpu_features;

class TestCpuFeatures : public QObject {
    Q_OBJECT

private slots:
    void matches_proc_cpuinfo();
};

namespace {

// The first "flags" line of /proc/cpuinfo, as a set of words.
QSet<QByteArray> linux_cpu_flags() {
    QFile file(QStringLiteral("/proc/cpuinfo"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    for (QByteArray line = file.readLine(); !line.isEmpty(); line = file.readLine()) {
        if (!line.startsWith("flags"))
            continue;
        const QList<QByteArray> words = line.mid(line.indexOf(':') + 1).simplified().split(' ');
        return QSet<QByteArray>(words.begin(), words.end());
    }
    return {};
}

} // namespace

void TestCpuFeatures::matches_proc_cpuinfo() {
#if !defined(__x86_64__)
    QSKIP("CPUID exists on x86-64 only; elsewhere every feature is false by construction");
#endif
    const QSet<QByteArray> flags = linux_cpu_flags();
    if (flags.isEmpty())
        QSKIP("no /proc/cpuinfo flags line to compare with (not Linux?)");
    const auto& f = cpu_features();
    QCOMPARE(f.avx2, flags.contains("avx2"));
    QCOMPARE(f.fma, flags.contains("fma"));
    QCOMPARE(f.f16c, flags.contains("f16c"));
    QCOMPARE(f.avx_vnni, flags.contains("avx_vnni"));
    const bool avx512_vnni = flags.contains("avx512f") && flags.contains("avx512bw") && flags.contains("avx512dq") &&
                             flags.contains("avx512vl") && flags.contains("avx512_vnni");
    QCOMPARE(f.avx512_vnni, avx512_vnni);
}

QTEST_GUILESS_MAIN(TestCpuFeatures)
#include "test_cpu_features.moc"

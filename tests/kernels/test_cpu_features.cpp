// cpu_features() against an independent view of the CPU, and the SIMD
// paths it makes available. x86-64: CPUID + XGETBV against the flags line of
// /proc/cpuinfo, which Linux fills from the same CPUID bits and clears for
// features whose registers it does not save. AArch64: getauxval's bits
// against the CPU's ID registers themselves, read with MRS (Linux and
// qemu-user emulate those reads for programs; the arm64 preset also runs
// this under qemu's cortex-a72, without dotprod, and neoverse-n1, with
// dotprod but no I8MM).
#include <QFile>
#include <QSet>
#include <QTest>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/simd_path.h"

using kvscope::kernels::cpu::cpu_features;
using kvscope::kernels::cpu::SimdPath;

class TestCpuFeatures : public QObject {
    Q_OBJECT

private slots:
    void matches_proc_cpuinfo();
    void matches_arm_id_registers();
    void paths_follow_features();
    void environment_chooses_the_path();
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

#if defined(__aarch64__) && defined(__linux__)
namespace {

// A 4-bit field of an ID register: 0 is absent, higher values are levels.
unsigned field(std::uint64_t reg, int lsb) { return static_cast<unsigned>((reg >> lsb) & 0xf); }

} // namespace
#endif

void TestCpuFeatures::matches_arm_id_registers() {
#if !(defined(__aarch64__) && defined(__linux__))
    QSKIP("ID registers read this way exist on AArch64 Linux only");
#else
    std::uint64_t pfr0 = 0, isar0 = 0, isar1 = 0;
    __asm__("mrs %0, ID_AA64PFR0_EL1" : "=r"(pfr0));
    __asm__("mrs %0, ID_AA64ISAR0_EL1" : "=r"(isar0));
    __asm__("mrs %0, ID_AA64ISAR1_EL1" : "=r"(isar1));
    const auto& f = cpu_features();
    QCOMPARE(f.neon, field(pfr0, 20) != 0xf); // AdvSIMD: 0xf means absent
    QCOMPARE(f.dotprod, field(isar0, 44) != 0); // DP
    QCOMPARE(f.i8mm, field(isar1, 52) != 0);    // I8MM
    qInfo("neon %d, dotprod %d, i8mm %d", f.neon, f.dotprod, f.i8mm);
#endif
}

// The paths offered are exactly those the features and the build allow,
// Scalar first, each NEON path needing its own extension and those below.
void TestCpuFeatures::paths_follow_features() {
    const auto& f = cpu_features();
    std::vector<SimdPath> expected{SimdPath::Scalar};
#if defined(KVSCOPE_KERNELS_AVX2)
    if (f.avx2 && f.fma && f.f16c)
        expected.push_back(SimdPath::Avx2);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
    if (f.neon)
        expected.push_back(SimdPath::Neon);
#endif
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    if (f.neon && f.dotprod)
        expected.push_back(SimdPath::NeonDot);
#endif
#if defined(KVSCOPE_KERNELS_NEON_I8MM)
    if (f.neon && f.dotprod && f.i8mm)
        expected.push_back(SimdPath::NeonI8mm);
#endif
    const auto paths = kvscope::kernels::cpu::available_simd_paths();
    QCOMPARE(std::vector<SimdPath>(paths.begin(), paths.end()), expected);
    QCOMPARE(kvscope::kernels::cpu::best_simd_path(), expected.back());
    qInfo("best path: %s", to_string(expected.back()));
}

// KVSCOPE_SIMD (ctest's test_simd_env_* runs set it) decides the path the
// kernels start on; naming no path that runs here is an error naming those
// that do.
void TestCpuFeatures::environment_chooses_the_path() {
    const QByteArray env = qgetenv("KVSCOPE_SIMD");
    if (env.isEmpty())
        QSKIP("KVSCOPE_SIMD is not set");
    try {
        QCOMPARE(QByteArray(to_string(kvscope::kernels::cpu::simd_path())), env);
    } catch (const std::invalid_argument& e) {
        QFAIL(e.what());
    }
}

QTEST_GUILESS_MAIN(TestCpuFeatures)
#include "test_cpu_features.moc"

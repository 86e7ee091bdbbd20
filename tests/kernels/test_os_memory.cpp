// kernels/cpu/os_memory.h: the page size, the huge-page hint, and letting go
// of a file mapping's pages, by the Linux call and by the POSIX fallback
// other systems use (both run here). The resident sizes come from
// tests/support/process_memory.h (Linux's smaps); where there is none, the
// drop itself is skipped and the rest still runs.
#include <QtTest>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/cpu/os_memory.h"
#include "support/process_memory.h"

using namespace kvscope::kernels::cpu;

namespace {

constexpr std::size_t kPages = 64;

// A file of kPages pages of known bytes, mapped read-only and private as
// engine/model/mapped_file.cpp maps a model, every page made resident.
class MappedTestFile {
public:
    explicit MappedTestFile(const QString& path) : bytes_(kPages * page_size()), expected_(bytes_, '\0') {
        for (std::size_t i = 0; i < bytes_; ++i)
            expected_[i] = static_cast<char>('a' + i % 23);
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly) || file.write(expected_.data(), qint64(bytes_)) != qint64(bytes_))
            return;
        file.close();
        const int fd = ::open(path.toLocal8Bit().constData(), O_RDONLY);
        void* mapped = fd >= 0 ? ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
        if (fd >= 0)
            ::close(fd);
        if (mapped == MAP_FAILED)
            return;
        data_ = static_cast<const char*>(mapped);
        volatile char sink = 0;
        for (std::size_t i = 0; i < bytes_; i += page_size())
            sink = sink ^ data_[i];
    }
    ~MappedTestFile() {
        if (data_ != nullptr)
            ::munmap(const_cast<char*>(data_), bytes_);
    }
    MappedTestFile(const MappedTestFile&) = delete;
    MappedTestFile& operator=(const MappedTestFile&) = delete;

    const char* data() const { return data_; }
    // The mapping still reads as the file.
    bool intact() const { return std::memcmp(data_, expected_.data(), bytes_) == 0; }

private:
    std::size_t bytes_;
    std::string expected_;
    const char* data_ = nullptr;
};

} // namespace

class TestOsMemory : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

private slots:
    void page_size_is_the_systems();
    void huge_page_hint_keeps_the_bytes();
    void release_drops_whole_pages_only_data();
    void release_drops_whole_pages_only();
};

void TestOsMemory::page_size_is_the_systems() {
    const std::size_t page = page_size();
    QCOMPARE(page, static_cast<std::size_t>(::getpagesize())); // the BSD call, answered apart from sysconf
    QVERIFY(page >= 4096 && (page & (page - 1)) == 0);
}

void TestOsMemory::huge_page_hint_keeps_the_bytes() {
    const bool thp = std::filesystem::exists("/sys/kernel/mm/transparent_hugepage");
    // Linux kernels built with transparent huge pages list their setting
    // and size there; a power of two, whole small pages.
    const std::size_t huge = thp ? huge_page_size() : std::size_t{2} << 20;
    QVERIFY(!thp || (huge >= page_size() && (huge & (huge - 1)) == 0 && huge % page_size() == 0));
    void* data = nullptr;
    QCOMPARE(posix_memalign(&data, huge, 2 * huge), 0);
    std::memset(data, 0x5a, 2 * huge);
    const bool taken = advise_huge_pages(data, 2 * huge);
    const auto* bytes = static_cast<const unsigned char*>(data);
    const bool kept = bytes[0] == 0x5a && bytes[huge] == 0x5a && bytes[2 * huge - 1] == 0x5a;
    std::free(data);
    QVERIFY(kept);
    // Such a kernel takes the hint whatever the setting says.
    if (thp)
        QVERIFY(taken);
    else
        qInfo("no transparent huge pages here: the hint was %s", taken ? "taken" : "not taken");
}

void TestOsMemory::release_drops_whole_pages_only_data() {
    QTest::addColumn<bool>("fallback");
    QTest::newRow("this system's call") << false;
    QTest::newRow("POSIX fallback") << true;
}

// From 100 bytes into page 0 to 50 bytes into page 10: pages 1 to 9 are
// whole, the two ends are kept.
void TestOsMemory::release_drops_whole_pages_only() {
    QFETCH(bool, fallback);
    const MappedTestFile file(dir_.filePath(QStringLiteral("pages.bin")));
    QVERIFY(file.data() != nullptr);
    const std::size_t page = page_size();
    const auto release = fallback ? detail::release_file_pages_posix : release_file_pages;
    QCOMPARE(release(file.data() + 100, page - 200), std::size_t{0}); // inside one page: none whole
    const std::optional<std::size_t> before = kvscope::test::mapping_resident_bytes(file.data());
    QCOMPARE(release(file.data() + 100, 10 * page - 50), 9 * page);
    const std::optional<std::size_t> after = kvscope::test::mapping_resident_bytes(file.data());
    QVERIFY(file.intact()); // read again from the file
#if defined(__linux__)
    if (!fallback) { // glibc takes POSIX_MADV_DONTNEED as a no-op: only Linux's own call drops pages
        if (!before || !after)
            QSKIP("no per-mapping resident size here");
        QVERIFY2(*after + 9 * page <= *before, qPrintable(QStringLiteral("%1 -> %2").arg(*before).arg(*after)));
    }
#endif
}

QTEST_GUILESS_MAIN(TestOsMemory)
#include "test_os_memory.moc"

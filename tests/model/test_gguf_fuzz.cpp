// Damaged copies of real GGUF files: truncated at every byte of the header
// region and at points spread over the data, and with bytes and bits
// flipped in the header, metadata and tensor table. Every case must either throw
// kvscope::Error naming the file or load with every tensor inside the file;
// anything else (a crash, another exception, an out-of-bounds read under
// AddressSanitizer) fails the test.
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include <fcntl.h>
#include <unistd.h>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor_stats.h"
#include "gguf_writer.h"
#include "support/test_models.h"

using kvscope::GgufFile;

namespace {

std::string read_all(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// How a damaged file fared.
struct Tally {
    int errors = 0;
    int loads = 0;
};

// Calls every getter on the key: one matches its type, the others throw.
void read_every_way(const GgufFile& file, std::string_view key) {
    const std::function<void()> getters[] = {
        [&] { file.get_string(key); },       [&] { file.get_uint(key); },
        [&] { file.get_float(key); },        [&] { file.get_bool(key); },
        [&] { file.get_string_array(key); }, [&] { file.get_float_array(key); },
        [&] { file.get_int_array(key); },    [&] { file.get_array_length(key); },
    };
    for (const auto& get : getters) {
        try {
            get();
        } catch (const kvscope::Error&) {
        }
    }
}

// Loads `path`; a successful load is used the way the engine would use it.
// Returns whether it loaded.
bool load_and_use(const std::string& path, Tally& tally) {
    try {
        const GgufFile file(path);
        for (const auto& t : file.tensors()) {
            if (file.data_offset() + t.offset + t.n_bytes > file.file_size())
                QTest::qFail(("tensor outside the file: " + t.name).c_str(), __FILE__, __LINE__);
            // Touch both ends: a bad pointer faults here (or ASan reports it).
            volatile std::byte sink = t.data[0];
            sink = t.data[t.n_bytes - 1];
            (void)sink;
        }
        for (std::string_view key : file.metadata_keys()) {
            file.describe_value(key);
            read_every_way(file, key);
        }
        kvscope::tensor_stats(file);
        try {
            kvscope::read_model_config(file);
        } catch (const kvscope::Error&) {
            // A flipped name or value may make a loadable file an unusable model.
        }
        ++tally.loads;
        return true;
    } catch (const kvscope::Error& e) {
        if (std::string(e.what()).rfind(path, 0) != 0)
            QTest::qFail((std::string("error without the file name: ") + e.what()).c_str(),
                         __FILE__, __LINE__);
        ++tally.errors;
        return false;
    }
}

// The damaged copies of one source file.
struct Subject {
    std::string bytes;
    std::uint64_t table_start = 0; // first tensor info
    std::uint64_t header_end = 0;  // start of the data section
    std::uint64_t required = 0;    // end of the last tensor's data
};

Subject subject(const QString& source) {
    Subject s{read_all(source)};
    const GgufFile intact(source.toStdString());
    s.header_end = intact.data_offset();
    s.required = s.header_end;
    for (const auto& t : intact.tensors())
        s.required = std::max(s.required, s.header_end + t.offset + t.n_bytes);
    // The first tensor info starts with its name's length and bytes.
    std::string first_name;
    kvscope::test::GgufWriter::put_string(first_name, intact.tensors().at(0).name);
    s.table_start = s.bytes.find(first_name, 24);
    if (s.table_start == std::string::npos || s.table_start >= s.header_end)
        qFatal("cannot find the tensor table");
    return s;
}

// Byte positions to cut or flip at: every byte of the fixed header and the
// tensor table, and every byte of the metadata when `every_byte`, else
// every 31st (the metadata is mostly token strings, where a cut lands in
// the same kind of place again and again).
std::vector<std::uint64_t> header_positions(const Subject& s, bool every_byte) {
    std::vector<std::uint64_t> at;
    const std::uint64_t metadata_stride = every_byte ? 1 : 31;
    for (std::uint64_t i = 0; i < s.header_end;
         i += (i >= 24 && i < s.table_start) ? metadata_stride : 1)
        at.push_back(i);
    return at;
}

} // namespace

class TestGgufFuzz : public QObject {
    Q_OBJECT

    // Tens of thousands of small writes: on tmpfs when there is one, as a
    // disk-backed /tmp makes them 20 times slower.
    QTemporaryDir dir_{QDir(QStringLiteral("/dev/shm")).exists()
                           ? QStringLiteral("/dev/shm/kvscope-fuzz-XXXXXX")
                           : QDir::tempPath() + QStringLiteral("/kvscope-fuzz-XXXXXX")};

private slots:
    void initTestCase() {
        kvscope::logger("model")->set_level(spdlog::level::warn); // one line per config otherwise
    }

    // stories260K-f32 is cut at every header byte; the others (one from
    // another writer, llama.cpp) at every byte of the fixed header and the
    // tensor table and at points through the metadata.
    void truncated_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("every_byte");
        QTest::newRow("stories260K-f32") << QStringLiteral("stories260K-f32.gguf") << true;
        QTest::newRow("stories260K-q8_0") << QStringLiteral("stories260K-q8_0.gguf") << false;
        QTest::newRow("stories260K-q4_k_m") << QStringLiteral("stories260K-q4_k_m.gguf") << false;
        QTest::newRow("tiny-kq-q4_k_m") << QStringLiteral("tiny-kq-q4_k_m.gguf") << false;
    }

    void truncated() {
        QFETCH(QString, name);
        QFETCH(bool, every_byte);
        const QString source = kvscope::test::test_model_path(name);
        if (source.isEmpty())
            QSKIP("shared models folder is absent");
        const Subject s = subject(source);

        std::vector<std::uint64_t> lengths = header_positions(s, every_byte);
        // Spread over the data, the last one byte short of the whole file.
        constexpr std::uint64_t kDataPoints = 200;
        const std::uint64_t data_size = s.bytes.size() - s.header_end;
        for (std::uint64_t i = 1; i <= kDataPoints; ++i)
            lengths.push_back(s.header_end + data_size * i / kDataPoints - 1);
        // Longest first, so each case only shortens the file.
        std::sort(lengths.rbegin(), lengths.rend());

        const std::string path = dir_.filePath(QStringLiteral("truncated.gguf")).toStdString();
        std::ofstream(path, std::ios::binary) << s.bytes;
        Tally tally;
        for (std::uint64_t n : lengths) {
            std::filesystem::resize_file(path, n);
            if (load_and_use(path, tally) && n < s.required)
                QFAIL(qPrintable(QStringLiteral("loaded when cut to %1 of %2 bytes").arg(n).arg(s.required)));
        }
        qInfo("%zu truncations: %d errors, %d loads", lengths.size(), tally.errors, tally.loads);
    }

    void flipped_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("every_byte");
        for (const char* name : {"stories260K-f32.gguf", "stories260K-q8_0.gguf",
                                 "stories260K-q4_k_m.gguf", "tiny-kq-q4_k_m.gguf"})
            QTest::newRow(name) << QString::fromLatin1(name) << false;
    }

    // Header bytes inverted one at a time, then random single-bit flips and
    // random multi-byte overwrites anywhere in the header and tensor table.
    void flipped() {
        QFETCH(QString, name);
        QFETCH(bool, every_byte);
        const QString source = kvscope::test::test_model_path(name);
        if (source.isEmpty())
            QSKIP("shared models folder is absent");
        const Subject s = subject(source);
        const std::string path = dir_.filePath(QStringLiteral("flipped.gguf")).toStdString();
        std::ofstream(path, std::ios::binary | std::ios::trunc) << s.bytes;
        const int fd = ::open(path.c_str(), O_WRONLY);
        QVERIFY(fd >= 0);
        const auto poke = [fd](std::uint64_t at, char value) {
            if (::pwrite(fd, &value, 1, static_cast<off_t>(at)) != 1)
                qFatal("cannot write the test file");
        };
        const auto restore = [&](std::uint64_t at) { poke(at, s.bytes[at]); };

        Tally tally;
        for (std::uint64_t at : header_positions(s, every_byte)) {
            poke(at, static_cast<char>(~s.bytes[at]));
            load_and_use(path, tally);
            restore(at);
        }
        std::mt19937_64 rng(12345);
        std::uniform_int_distribution<std::uint64_t> position(0, s.header_end - 1);
        for (int i = 0; i < 500; ++i) {
            const std::uint64_t at = position(rng);
            poke(at, static_cast<char>(s.bytes[at] ^ (1 << (rng() % 8))));
            load_and_use(path, tally);
            restore(at);
        }
        for (int i = 0; i < 200; ++i) {
            std::vector<std::uint64_t> touched;
            for (std::uint64_t k = 0, n = 2 + rng() % 7; k < n; ++k) {
                touched.push_back(position(rng));
                poke(touched.back(), static_cast<char>(rng()));
            }
            load_and_use(path, tally);
            for (std::uint64_t at : touched)
                restore(at);
        }
        ::close(fd);
        qInfo("%d damaged headers: %d errors, %d loads", tally.errors + tally.loads, tally.errors,
              tally.loads);
        QCOMPARE(read_all(QString::fromStdString(path)), s.bytes); // every byte was restored
    }
};

QTEST_APPLESS_MAIN(TestGgufFuzz)
#include "test_gguf_fuzz.moc"

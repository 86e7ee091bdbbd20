// GgufFile on hand-built files: metadata of every type, tensor placement,
// and one clear error per kind of malformed file.
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "gguf_writer.h"

using kvscope::GgmlType;
using kvscope::GgufFile;
using kvscope::test::GgufWriter;

namespace {

std::string key_bytes(std::string_view key) {
    std::string out;
    GgufWriter::put_string(out, key);
    return out;
}

template <typename... T>
std::string raw(T... values) {
    std::string out;
    (GgufWriter::put(out, values), ...);
    return out;
}

} // namespace

class TestGgufFile : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    int counter_ = 0;

    std::string write(const std::string& bytes) {
        const std::string path =
            dir_.filePath(QStringLiteral("f%1.gguf").arg(++counter_)).toStdString();
        std::ofstream(path, std::ios::binary) << bytes;
        return path;
    }

    // Loading must fail with a kvscope::Error naming the file and `problem`.
    void expect_error(const std::string& bytes, const std::string& problem) {
        const std::string path = write(bytes);
        try {
            GgufFile file(path);
            QFAIL(qPrintable(QString::fromStdString("loaded, expected error: " + problem)));
        } catch (const kvscope::Error& e) {
            const std::string message = e.what();
            if (message.find(path) == std::string::npos || message.find(problem) == std::string::npos)
                QFAIL(qPrintable(QString::fromStdString("error '" + message + "' lacks '" + problem + "'")));
        }
    }

    static GgufWriter with_one_tensor() {
        GgufWriter w;
        w.add_string("general.architecture", "llama");
        w.add_tensor("t", {4, 2}, 0, kvscope::test::f32_bytes({1, 2, 3, 4, 5, 6, 7, 8}));
        return w;
    }

private slots:
    void metadataOfEveryType() {
        GgufWriter w;
        w.add_u8("u8", 200);
        w.add_i8("i8", -5);
        w.add_u16("u16", 60000);
        w.add_i16("i16", 1234);
        w.add_u32("u32", 4000000000u);
        w.add_i32("i32", -7);
        w.add_u64("u64", 1ull << 40);
        w.add_i64("i64", 42);
        w.add_f32("f32", 0.5f);
        w.add_f64("f64", 1e-6);
        w.add_bool("bool", true);
        w.add_string("str", "héllo");
        w.add_string_array("strs", {"a", "", "ccc"});
        w.add_array<float>("floats", GgufWriter::F32, {1.5f, -2.0f});
        w.add_array<std::int32_t>("ints", GgufWriter::I32, {-1, 0, 7});
        w.add_array<std::uint8_t>("bytes", GgufWriter::U8, {1, 2, 255});
        w.add_array<double>("doubles", GgufWriter::F64, {0.25});
        const GgufFile f(write(w.bytes()));

        QCOMPARE(f.version(), 3u);
        QVERIFY(f.has("u8"));
        QVERIFY(!f.has("absent"));
        QCOMPARE(f.metadata_keys().size(), 17u);
        QCOMPARE(f.metadata_keys()[11], std::string_view("str"));
        QCOMPARE(*f.get_uint("u8"), 200u);
        QCOMPARE(*f.get_uint("u16"), 60000u);
        QCOMPARE(*f.get_uint("i16"), 1234u);
        QCOMPARE(*f.get_uint("u32"), 4000000000u);
        QCOMPARE(*f.get_uint("u64"), 1ull << 40);
        QCOMPARE(*f.get_uint("i64"), 42u);
        QCOMPARE(*f.get_float("f32"), 0.5);
        QCOMPARE(*f.get_float("f64"), 1e-6);
        QCOMPARE(*f.get_float("i8"), -5.0);
        QCOMPARE(*f.get_bool("bool"), true);
        QCOMPARE(*f.get_string("str"), std::string("héllo"));
        QCOMPARE(*f.get_string_array("strs"), (std::vector<std::string>{"a", "", "ccc"}));
        QCOMPARE(*f.get_float_array("floats"), (std::vector<float>{1.5f, -2.0f}));
        QCOMPARE(*f.get_float_array("doubles"), (std::vector<float>{0.25f}));
        QCOMPARE(*f.get_int_array("ints"), (std::vector<std::int32_t>{-1, 0, 7}));
        QCOMPARE(*f.get_int_array("bytes"), (std::vector<std::int32_t>{1, 2, 255}));
        QCOMPARE(*f.get_array_length("strs"), 3u);
        QVERIFY(!f.get_uint("absent").has_value());
        QVERIFY(!f.get_string_array("absent").has_value());
        QCOMPARE(f.describe_value("i32"), std::string("-7"));
        QCOMPARE(f.describe_value("strs"), std::string("[3 x string] 'a', '', 'ccc'"));
        QVERIFY(f.tensors().empty()); // a vocabulary-only file, ending right after the metadata
    }

    void wrongTypesNameKeyAndTypes() {
        GgufWriter w;
        w.add_string("name", "x");
        w.add_i32("negative", -3);
        w.add_array<std::uint32_t>("big", GgufWriter::U32, {3000000000u});
        w.add_string_array("strs", {"a"});
        w.add_bool("flag", false);
        const GgufFile f(write(w.bytes()));
        const auto message = [](auto&& call) -> std::string {
            try {
                call();
            } catch (const kvscope::Error& e) {
                return e.what();
            }
            return "no error";
        };
        QVERIFY(message([&] { f.get_uint("name"); }).find("metadata 'name' has type string, expected an integer") != std::string::npos);
        QVERIFY(message([&] { f.get_string("negative"); }).find("'negative' has type i32, expected a string") != std::string::npos);
        QVERIFY(message([&] { f.get_uint("negative"); }).find("is -3, expected a non-negative") != std::string::npos);
        QVERIFY(message([&] { f.get_int_array("big"); }).find("outside the i32 range") != std::string::npos);
        QVERIFY(message([&] { f.get_float_array("strs"); }).find("has type array of string, expected an array of f32") != std::string::npos);
        QVERIFY(message([&] { f.get_string_array("name"); }).find("expected an array of string") != std::string::npos);
        QVERIFY(message([&] { f.get_bool("name"); }).find("expected a bool") != std::string::npos);
        QVERIFY(message([&] { f.get_float("flag"); }).find("has type bool, expected a number") != std::string::npos);
    }

    void tensorsArePlacedInTheMapping() {
        GgufWriter w;
        w.alignment = 64;
        w.add_u32("general.alignment", 64);
        w.add_tensor("a", {4, 2}, 0, kvscope::test::f32_bytes({1, 2, 3, 4, 5, 6, 7, 8}));
        std::string q8 = raw(std::uint16_t{0x3C00}); // d = 1
        for (int i = 0; i < 32; ++i)
            q8 += static_cast<char>(i - 16);
        w.add_tensor("b", {32}, 8, q8);
        const GgufFile f(write(w.bytes()));

        QCOMPARE(f.alignment(), 64u);
        QCOMPARE(f.tensors().size(), 2u);
        const auto* b = f.find_tensor("b");
        QVERIFY(b != nullptr);
        QVERIFY(f.find_tensor("c") == nullptr);
        QCOMPARE(b->type, GgmlType::Q8_0);
        QCOMPARE(b->offset, 64u);
        QCOMPARE(b->n_bytes, 34u);
        QCOMPARE(b->dims, (std::vector<std::uint64_t>{32}));
        std::vector<float> row(32);
        kvscope::dequantize_row(b->type, b->data, row.data(), 32);
        QCOMPARE(row[0], -16.0f);
        QCOMPARE(row[31], 15.0f);
        const auto* a = f.find_tensor("a");
        float second = 0;
        std::memcpy(&second, a->data + 4, 4);
        QCOMPARE(second, 2.0f);
    }

    void version2LoadsAndMoves() {
        GgufWriter w = with_one_tensor();
        w.version = 2;
        GgufFile f(write(w.bytes()));
        QCOMPARE(f.version(), 2u);
        const std::byte* data = f.tensors()[0].data;
        GgufFile moved(std::move(f));
        QCOMPARE(moved.tensors()[0].data, data); // the mapping moved with it
        QCOMPARE(*moved.get_string("general.architecture"), std::string("llama"));
        GgufFile other(write(GgufWriter().bytes()));
        other = std::move(moved);
        float first = 0;
        std::memcpy(&first, other.find_tensor("t")->data, 4);
        QCOMPARE(first, 1.0f);
    }

    void rejectsNonGgufFiles() {
        expect_error("", "truncated: the GGUF magic needs 4 bytes at byte 0, but the file ends at byte 0");
        expect_error("GGU", "truncated");
        expect_error("\x7F" "ELF" + std::string(40, '\0'), "not a GGUF file (it starts with bytes 7F 45 4C 46");
        GgufWriter v1;
        v1.version = 1;
        expect_error(v1.bytes(), "GGUF version 1 is not supported (expected 2 or 3)");
        GgufWriter big;
        big.version = 0x03000000;
        expect_error(big.bytes(), "big-endian GGUF files are not supported");
        try {
            GgufFile missing(dir_.filePath(QStringLiteral("absent.gguf")).toStdString());
            QFAIL("opened a missing file");
        } catch (const kvscope::Error& e) {
            QVERIFY(std::string(e.what()).find("absent.gguf: cannot open") != std::string::npos);
        }
        QVERIFY_THROWS_EXCEPTION(kvscope::Error, GgufFile(dir_.path().toStdString()));
    }

    void rejectsAbsurdCountsBeforeAllocating() {
        expect_error("GGUF" + raw(std::uint32_t{3}, std::uint64_t{0}, std::uint64_t{1} << 60),
                     "header claims 1,152,921,504,606,846,976 metadata entries, but only 0 bytes follow");
        expect_error("GGUF" + raw(std::uint32_t{3}, ~std::uint64_t{0}, std::uint64_t{0}),
                     "tensors, but only 0 bytes follow");
        GgufWriter w;
        w.add_raw_metadata(key_bytes("k") + raw(std::uint32_t{8}, std::uint64_t{1} << 62));
        expect_error(w.bytes(), "the value of metadata 'k' at byte 37 claims 4,611,686,018,427,387,904 bytes, but only 0 bytes follow");
        GgufWriter a;
        a.add_raw_metadata(key_bytes("arr") + raw(std::uint32_t{9}, std::uint32_t{8}, std::uint64_t{1} << 61));
        expect_error(a.bytes(), "the array of metadata 'arr' claims 2,305,843,009,213,693,952 elements of type string");
        GgufWriter k;
        k.add_raw_metadata(raw(std::uint64_t{1} << 50) + std::string(16, 'k'));
        expect_error(k.bytes(), "the key of metadata entry 0 at byte 24 claims 1,125,899,906,842,624 bytes, but only 16 bytes follow");
    }

    void rejectsMalformedMetadata() {
        GgufWriter type;
        type.add_raw_metadata(key_bytes("k") + raw(std::uint32_t{13}, std::uint32_t{0}));
        expect_error(type.bytes(), "the value type of metadata 'k' is 13, not a GGUF value type");
        GgufWriter nested;
        nested.add_raw_metadata(key_bytes("k") + raw(std::uint32_t{9}, std::uint32_t{9}, std::uint64_t{0}));
        expect_error(nested.bytes(), "metadata 'k' is an array of arrays");
        GgufWriter boolean;
        boolean.add_raw_metadata(key_bytes("k") + raw(std::uint32_t{7}, std::uint8_t{2}));
        expect_error(boolean.bytes(), "a bool of metadata 'k' at byte 37 is 2, expected 0 or 1");
        GgufWriter twice;
        twice.add_u32("k", 1);
        twice.add_u32("k", 2);
        expect_error(twice.bytes(), "metadata key 'k' appears twice");
        GgufWriter empty;
        empty.add_u32("", 1);
        expect_error(empty.bytes(), "metadata entry 0 has an empty key");
        GgufWriter control;
        control.add_raw_metadata(key_bytes("bad\x01key") + raw(std::uint32_t{4}));
        expect_error(control.bytes(), "truncated: the value of metadata 'bad?key'");
        GgufWriter alignment = with_one_tensor();
        alignment.add_u32("general.alignment", 48);
        expect_error(alignment.bytes(), "general.alignment is 48, expected a power of two");
        GgufWriter alignment_type = with_one_tensor();
        alignment_type.add_string("general.alignment", "32");
        expect_error(alignment_type.bytes(), "metadata 'general.alignment' has type string, expected an integer");
    }

    void rejectsMalformedTensorInfos() {
        const std::string f32 = kvscope::test::f32_bytes({0, 0, 0, 0});
        GgufWriter dims;
        dims.add_tensor("t", {1, 1, 1, 1, 4}, 0, f32);
        expect_error(dims.bytes(), "tensor 't' has 5 dimensions, expected 1 to 4");
        GgufWriter zero;
        zero.add_tensor("t", {4, 0}, 0, f32);
        expect_error(zero.bytes(), "tensor 't' has a zero dimension");
        GgufWriter type;
        type.add_tensor("t", {4}, 5, f32);
        expect_error(type.bytes(), "tensor 't' has unknown ggml type 5");
        GgufWriter row;
        row.add_tensor("t", {48}, 8, std::string(68, '\0'));
        expect_error(row.bytes(), "tensor 't' (Q8_0): row length 48 is not a whole number of Q8_0 blocks (32 values each)");
        GgufWriter offset;
        offset.add_tensor("t", {4}, 0, f32, 8);
        expect_error(offset.bytes(), "tensor 't': data offset 8 is not a multiple of the alignment 32");
        GgufWriter twice;
        twice.add_tensor("t", {4}, 0, f32);
        twice.add_tensor("t", {4}, 0, f32);
        expect_error(twice.bytes(), "tensor 't' appears twice");
        GgufWriter overlap;
        overlap.add_tensor("a", {16}, 0, std::string(64, '\0'));
        overlap.add_tensor("b", {4}, 0, f32, 32);
        expect_error(overlap.bytes(), "tensors 'a' (data bytes 0 to 64) and 'b' (from data byte 32) overlap");
    }

    void rejectsTensorsOutsideTheFile() {
        GgufWriter w = with_one_tensor();
        const std::string full = w.bytes();
        const std::string cut = full.substr(0, full.size() - 4);
        expect_error(cut, "tensor 't': data ends at byte " + std::to_string(full.size()) +
                              " but the file has " + std::to_string(cut.size()) + " bytes");
        // A tensor 2^62 bytes into the data section (written by hand: the
        // writer would pad the file to reach it).
        std::string header = "GGUF" + raw(std::uint32_t{3}, std::uint64_t{1}, std::uint64_t{0});
        GgufWriter::put_string(header, "t");
        header += raw(std::uint32_t{1}, std::uint64_t{4}, std::uint32_t{0}, std::uint64_t{1} << 62);
        expect_error(header, "the tensor data section would start at byte 64, but the file has 57 bytes");
        header.resize(64, '\0');
        expect_error(header, "tensor 't': data starts at offset 4,611,686,018,427,387,904 of the data section (byte 64), past the end of the file (64 bytes)");
    }
};

QTEST_APPLESS_MAIN(TestGgufFile)
#include "test_gguf_file.moc"

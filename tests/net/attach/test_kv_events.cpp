// vLLM KV event batches (net/attach/kv_events.h): both encodings at both
// levels, integer and bytes hashes, payloads shaped as vLLM releases wrote
// them (hand-packed here, not by the fixture's encoder), and malformed or
// hostile payloads, which must throw KvEventsError and nothing else.
#include <QtTest>

#include <msgpack.hpp>

#include "net/attach/kv_events.h"
#include "fake_vllm_publisher.h"

using namespace kvscope::attach;
using testing::BatchShape;
using testing::Encoding;
using testing::EventShape;
using testing::HashShape;

Q_DECLARE_METATYPE(kvscope::attach::testing::Encoding)

namespace {

// Writes msgpack by hand, as vLLM's msgspec would.
struct Pack {
    msgpack::sbuffer buffer;
    msgpack::packer<msgpack::sbuffer> p{buffer};

    Pack& array(std::uint32_t n) { return p.pack_array(n), *this; }
    Pack& map(std::uint32_t n) { return p.pack_map(n), *this; }
    Pack& str(std::string_view s) {
        p.pack_str(static_cast<std::uint32_t>(s.size()));
        p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
        return *this;
    }
    Pack& bin(std::string_view s) {
        p.pack_bin(static_cast<std::uint32_t>(s.size()));
        p.pack_bin_body(s.data(), static_cast<std::uint32_t>(s.size()));
        return *this;
    }
    Pack& u(std::uint64_t v) { return p.pack_uint64(v), *this; }
    Pack& i(std::int64_t v) { return p.pack_int64(v), *this; }
    Pack& f(double v) { return p.pack_double(v), *this; }
    Pack& nil() { return p.pack_nil(), *this; }
    std::string bytes() const { return {buffer.data(), buffer.size()}; }
};

constexpr BlockHash kHigh = 0xF00DFACE12345678ULL; // above 2^63: must stay unsigned

KvEventBatch sample_batch() {
    KvEventBatch b;
    b.ts = 1765432109.25;
    b.data_parallel_rank = 1;
    b.events.emplace_back(BlockStored{{11, 12, kHigh}, std::nullopt, 48, 16, "GPU", std::nullopt, std::nullopt, std::nullopt, std::nullopt});
    b.events.emplace_back(BlockStored{{13}, kHigh, 16, 16, std::nullopt, "adapter-a", 0, "full_attention", std::nullopt});
    b.events.emplace_back(BlockStored{{13}, kHigh, 16, 16, std::nullopt, "adapter-a", 1, "sliding_window", 512});
    b.events.emplace_back(BlockRemoved{{11, ~BlockHash{0}}, "GPU", std::nullopt});
    b.events.emplace_back(AllBlocksCleared{});
    b.events.emplace_back(BlockRemoved{{12}, std::nullopt, 2});
    return b;
}

const BlockStored& stored(const KvEventBatch& b, std::size_t i) { return std::get<BlockStored>(b.events.at(i)); }
const BlockRemoved& removed(const KvEventBatch& b, std::size_t i) { return std::get<BlockRemoved>(b.events.at(i)); }

void expect_error(const std::string& payload, const char* says) {
    try {
        decode_kv_event_batch(payload);
        QFAIL(qPrintable(QString("decoded, expected an error saying '%1'").arg(says)));
    } catch (const KvEventsError& e) {
        QVERIFY2(std::string(e.what()).find(says) != std::string::npos, e.what());
    }
}

} // namespace

class TestKvEvents : public QObject {
    Q_OBJECT

private slots:
    void everyEncodingDecodesTheSameBatch_data() {
        QTest::addColumn<Encoding>("encoding");
        for (BatchShape batch : {BatchShape::Array, BatchShape::Map})
            for (EventShape events : {EventShape::TaggedArray, EventShape::Map})
                for (HashShape hashes : {HashShape::Int, HashShape::Bytes})
                    QTest::addRow("batch %s, events %s, hashes %s", batch == BatchShape::Array ? "array" : "map",
                                  events == EventShape::Map ? "map" : "tagged array",
                                  hashes == HashShape::Int ? "int" : "bytes")
                        << Encoding{batch, events, hashes};
    }
    void everyEncodingDecodesTheSameBatch() {
        QFETCH(Encoding, encoding);
        const KvEventBatch batch = sample_batch();
        QCOMPARE(decode_kv_event_batch(testing::encode_kv_event_batch(batch, encoding)), batch);
    }

    // v0.26.0 on the wire (kthena#1535): positional batch, events as tagged maps.
    void vllm026MapEventsInAnArrayBatch() {
        Pack p;
        p.array(3).f(1765432109.5).array(1);
        p.map(11).str("type").str("BlockStored");
        p.str("block_hashes").array(2).u(kHigh).u(7);
        p.str("parent_block_hash").nil();
        p.str("token_ids").array(3).u(1).u(2).u(3);
        p.str("block_size").u(16);
        p.str("lora_id").nil();
        p.str("medium").str("GPU");
        p.str("lora_name").nil();
        p.str("extra_keys").array(2).nil().nil();
        p.str("group_idx").u(0);
        p.str("kv_cache_spec_kind").str("full_attention");
        p.i(0);
        const KvEventBatch b = decode_kv_event_batch(p.bytes());
        QCOMPARE(b.ts, 1765432109.5);
        QCOMPARE(b.data_parallel_rank, std::optional<std::int64_t>(0));
        QCOMPARE(stored(b, 0).hashes, (std::vector<BlockHash>{kHigh, 7}));
        QVERIFY(!stored(b, 0).parent);
        QCOMPARE(stored(b, 0).tokens, 3u);
        QCOMPARE(stored(b, 0).block_size, 16u);
        QCOMPARE(stored(b, 0).medium, std::optional<std::string>("GPU"));
        QCOMPARE(stored(b, 0).group_idx, std::optional<std::int64_t>(0));
        QCOMPARE(stored(b, 0).kv_cache_spec_kind, std::optional<std::string>("full_attention"));
        QVERIFY(!stored(b, 0).kv_cache_spec_sliding_window);
    }

    // The first release (#16750): five fields, no medium, no rank.
    void legacyFiveFieldEventsWithoutRank() {
        Pack p;
        p.array(2).f(12.0).array(2);
        p.array(6).str("BlockStored").array(1).u(5).u(4).array(0).u(16).nil();
        p.array(2).str("BlockRemoved").array(1).u(4);
        const KvEventBatch b = decode_kv_event_batch(p.bytes());
        QVERIFY(!b.data_parallel_rank);
        QCOMPARE(stored(b, 0).parent, std::optional<BlockHash>(4));
        QVERIFY(!stored(b, 0).medium);
        QCOMPARE(removed(b, 1).hashes, std::vector<BlockHash>{4});
        QVERIFY(is_gpu_medium(removed(b, 1).medium));
    }

    // A newer vLLM may add trailing fields (remaining_copy_counts) and map keys.
    void unknownFieldsAndTrailingItemsAreIgnored() {
        Pack p;
        p.map(4).str("ts").u(3).str("future").array(1).u(9).str("data_parallel_rank").u(2).str("events").array(2);
        p.array(5).str("BlockRemoved").array(1).u(4).str("CPU").u(1).array(1).u(0);
        p.map(4).str("hint").map(0).str("type").str("BlockStored").str("block_hashes").array(1).u(8).str("x").nil();
        const KvEventBatch b = decode_kv_event_batch(p.bytes());
        QCOMPARE(b.ts, 3.0);
        QCOMPARE(b.data_parallel_rank, std::optional<std::int64_t>(2));
        QCOMPARE(removed(b, 0).medium, std::optional<std::string>("CPU"));
        QCOMPARE(removed(b, 0).group_idx, std::optional<std::int64_t>(1));
        QVERIFY(!is_gpu_medium(removed(b, 0).medium));
        QCOMPARE(stored(b, 1).hashes, std::vector<BlockHash>{8});
    }

    void unknownEventTypesAreSkippedAndNamed() {
        KvEventBatch batch = sample_batch();
        batch.unknown_types = {"BlockPinned", "BlockMoved"};
        for (EventShape shape : {EventShape::TaggedArray, EventShape::Map}) {
            const KvEventBatch b = decode_kv_event_batch(testing::encode_kv_event_batch(batch, {BatchShape::Array, shape}));
            QCOMPARE(b.events, sample_batch().events);
            QCOMPARE(b.unknown_types, batch.unknown_types);
        }
    }

    // A signed encoder writes hashes above 2^63 as negative integers.
    void negativeIntegerHashIsItsTwosComplement() {
        Pack p;
        p.array(2).f(1).array(1).array(3).str("BlockRemoved").array(2).i(-1).i(-2).nil();
        QCOMPARE(removed(decode_kv_event_batch(p.bytes()), 0).hashes,
                 (std::vector<BlockHash>{0xFFFFFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFFEULL}));
    }

    // Bytes are keyed by their last 8 bytes, big-endian: the integer mode's key.
    void bytesHashIsKeyedLikeTheIntegerMode() {
        const std::string digest32 = testing::hash_bytes(kHigh);
        QCOMPARE(digest32.size(), std::size_t{32});
        const std::string digest16 = std::string(8, '\x01') + digest32.substr(24);
        Pack p;
        p.array(2).f(1).array(1).array(3).str("BlockStored").array(2).bin(digest32).bin(digest16).bin("\x01\x02");
        const KvEventBatch b = decode_kv_event_batch(p.bytes());
        const BlockStored& e = stored(b, 0);
        QCOMPARE(e.hashes, (std::vector<BlockHash>{kHigh, kHigh}));
        QCOMPARE(e.parent, std::optional<BlockHash>(0x0102));
    }

    void malformedPayloadsSayWhatIsWrong_data() {
        QTest::addColumn<QByteArray>("payload");
        QTest::addColumn<QString>("says");
        const auto row = [](const char* name, const std::string& bytes, const char* says) {
            QTest::newRow(name) << QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size())) << QString(says);
        };
        row("empty", "", "empty");
        row("not msgpack", "\xc1", "not msgpack");
        row("a number", Pack().u(5).bytes(), "batch should be an array or a map");
        row("no events", Pack().array(1).f(1).bytes(), "batch.events: missing");
        row("ts a string", Pack().array(2).str("now").array(0).bytes(), "batch.ts should be a number");
        row("events a map", Pack().array(2).f(1).map(0).bytes(), "batch.events should be an array");
        row("event a number", Pack().array(2).f(1).array(1).u(3).bytes(), "event should be a tagged array or a map");
        row("event without tag", Pack().array(2).f(1).array(1).array(0).bytes(), "no type tag");
        row("tag not a string", Pack().array(2).f(1).array(1).array(1).u(1).bytes(), "event type tag should be a string");
        row("map without type", Pack().array(2).f(1).array(1).map(0).bytes(), "without a \"type\" key");
        row("stored without hashes", Pack().array(2).f(1).array(1).array(1).str("BlockStored").bytes(),
            "BlockStored.block_hashes: missing");
        row("hash a string", Pack().array(2).f(1).array(1).array(2).str("BlockRemoved").array(1).str("ab").bytes(),
            "integer or bytes hash");
        row("empty bytes hash", Pack().array(2).f(1).array(1).array(2).str("BlockRemoved").array(1).bin("").bytes(),
            "empty bytes hash");
        row("negative block size",
            Pack().array(2).f(1).array(1).array(5).str("BlockStored").array(0).nil().array(0).i(-16).bytes(),
            "block_size should be a non-negative 32-bit integer");
        row("medium a number", Pack().array(2).f(1).array(1).array(3).str("BlockRemoved").array(0).u(1).bytes(),
            "medium should be a string");
        row("trailing bytes", Pack().array(2).f(1).array(0).u(1).bytes(), "1 bytes after the batch");
        // Headers claiming 2^32-1 items in a few bytes: refused before any allocation.
        const std::string batch_head = Pack().array(2).f(1).bytes();
        row("huge array", batch_head + std::string("\xdd\xff\xff\xff\xff", 5), "not msgpack");
        row("huge map", std::string("\xdf\xff\xff\xff\xff", 5), "not msgpack");
        row("huge bin", batch_head + Pack().array(1).array(2).str("BlockRemoved").array(1).bytes() +
                            std::string("\xc6\xff\xff\xff\xff", 5), "not msgpack");
        row("deep nesting", std::string(200, '\x91'), "not msgpack");
        const std::size_t over = (std::size_t{1} << 20) + 1; // items, each a real byte: refused all the same
        row("array over the item limit", batch_head + "\xdd" + std::string("\x00\x10\x00\x01", 4) + std::string(over, '\x00'),
            "not msgpack");
    }
    void malformedPayloadsSayWhatIsWrong() {
        QFETCH(QByteArray, payload);
        QFETCH(QString, says);
        expect_error(payload.toStdString(), qPrintable(says));
    }

    // Every truncation of a real batch is an error, never a crash or a smaller batch.
    void everyTruncationThrows() {
        for (Encoding enc : {Encoding{}, Encoding{BatchShape::Map, EventShape::Map, HashShape::Bytes}}) {
            const std::string whole = testing::encode_kv_event_batch(sample_batch(), enc);
            for (std::size_t n = 0; n < whole.size(); ++n)
                QVERIFY_THROWS_EXCEPTION(KvEventsError, decode_kv_event_batch(whole.substr(0, n)));
        }
    }
};

QTEST_GUILESS_MAIN(TestKvEvents)
#include "test_kv_events.moc"

// The snapshot's JSON (engine/snapshot_json.h): snapshots of a real engine
// run (a tiny random-weight model, so no models folder is needed) come back equal from their JSON text, the keys are exactly those
// docs/snapshot.md documents, unknown values are null, and bad input is
// refused with a message naming what is wrong.
#include <QtTest>

#include <map>
#include <set>

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/model/synthetic_model.h"
#include "engine/snapshot_json.h"
#include "engine_test_support.h"

using namespace kvscope;
using namespace kvscope::test;
using Json = nlohmann::ordered_json;

namespace {

void compare_layouts(const KvLayout& a, const KvLayout& b) {
    QCOMPARE(a.geometry().n_layers, b.geometry().n_layers);
    QCOMPARE(a.geometry().n_kv_heads, b.geometry().n_kv_heads);
    QCOMPARE(a.geometry().head_dim, b.geometry().head_dim);
    QCOMPARE(a.dtype(), b.dtype());
    QCOMPARE(a.block_size(), b.block_size());
    const KvGroups &ga = a.groups(), &gb = b.groups();
    QCOMPARE(ga.size(), gb.size());
    for (std::size_t g = 0; g < ga.size(); ++g) {
        QCOMPARE(ga[g].window, gb[g].window);
        QVERIFY(ga[g].layers == gb[g].layers);
    }
    QCOMPARE(ga.keeps_whole(), gb.keeps_whole());
}

void compare_fragmentation(const FragmentationStats& a, const FragmentationStats& b) {
    QCOMPARE(a.total_blocks, b.total_blocks);
    QCOMPARE(a.block_size, b.block_size);
    QCOMPARE(a.used_blocks, b.used_blocks);
    QCOMPARE(a.free_blocks, b.free_blocks);
    QCOMPARE(a.cached_free_blocks, b.cached_free_blocks);
    QCOMPARE(a.token_slots, b.token_slots);
    QCOMPARE(a.internal_waste_slots, b.internal_waste_slots);
    QCOMPARE(a.reserved_waste_slots, b.reserved_waste_slots);
    QCOMPARE(a.external_blocks, b.external_blocks);
    QCOMPARE(a.largest_free_run, b.largest_free_run);
    QCOMPARE(a.pending_request_blocks, b.pending_request_blocks);
}

void compare_pools(const PoolSnapshot& a, const PoolSnapshot& b) {
    QCOMPARE(a.mode, b.mode);
    compare_layouts(a.layout, b.layout);
    QCOMPARE(a.chunk_tokens, b.chunk_tokens);
    QVERIFY(a.blocks == b.blocks);
    QVERIFY(a.owners == b.owners);
    QVERIFY(a.sequences == b.sequences);
    compare_fragmentation(a.fragmentation, b.fragmentation);
    QCOMPARE(a.swap_blocks_total, b.swap_blocks_total);
    QCOMPARE(a.swap_blocks_used, b.swap_blocks_used);
    QCOMPARE(a.prefix_hit_tokens, b.prefix_hit_tokens);
    QCOMPARE(a.prefix_query_tokens, b.prefix_query_tokens);
    QCOMPARE(a.tail_bytes, b.tail_bytes);
}

// Field by field, the pool's contents rather than its pointer.
void compare_snapshots(const EngineSnapshot& a, const EngineSnapshot& b) {
    QCOMPARE(a.step, b.step);
    QCOMPARE(a.time_s, b.time_s);
    QVERIFY(a.device == b.device);
    QCOMPARE(!a.pool, !b.pool);
    if (a.pool)
        compare_pools(*a.pool, *b.pool);
    QVERIFY(a.seqs == b.seqs);
    QVERIFY(a.ended_seqs == b.ended_seqs);
    QCOMPARE(a.running, b.running);
    QCOMPARE(a.waiting, b.waiting);
    QCOMPARE(a.swapped, b.swapped);
    QCOMPARE(a.preemptions, b.preemptions);
    QCOMPARE(a.completed_requests, b.completed_requests);
    QCOMPARE(a.aborted_requests, b.aborted_requests);
    QCOMPARE(a.failed_requests, b.failed_requests);
    QCOMPARE(a.refused_requests, b.refused_requests);
    QCOMPARE(a.prompt_tokens, b.prompt_tokens);
    QCOMPARE(a.generated_tokens, b.generated_tokens);
    QCOMPARE(a.prompt_tokens_per_s, b.prompt_tokens_per_s);
    QCOMPARE(a.generation_tokens_per_s, b.generation_tokens_per_s);
    QCOMPARE(a.busy_s, b.busy_s);
    QCOMPARE(a.last_step_s, b.last_step_s);
    QCOMPARE(a.last_step_expert_s, b.last_step_expert_s);
    QVERIFY(a.ttft == b.ttft);
    QVERIFY(a.itl == b.itl);
    QCOMPARE(a.prefix_hit_rate, b.prefix_hit_rate);
    QCOMPARE(a.prefix_hit_tokens, b.prefix_hit_tokens);
}

// The ended sequences a snapshot lists are exactly the last holders of its
// cached-free blocks that are no longer live: evicted or revived blocks
// take their entries with them.
std::set<SeqId> ended_last_holders(const EngineSnapshot& s) {
    std::set<SeqId> live, ended;
    for (const SeqSnapshot& seq : s.seqs)
        live.insert(seq.seq);
    for (const BlockInfo& b : s.pool->blocks)
        if (b.last_holder && !live.contains(*b.last_holder))
            ended.insert(*b.last_holder);
    return ended;
}

std::set<SeqId> listed_ended(const EngineSnapshot& s) {
    std::set<SeqId> ids;
    for (const EndedSeq& e : s.ended_seqs)
        ids.insert(e.seq);
    return ids;
}

EngineSnapshot through_text(const EngineSnapshot& s) {
    return engine_snapshot_from_json(Json::parse(to_json(s).dump()));
}

// A pool with a forked sequence (a shared block), one on its own and a
// cached-free block, without a model.
std::shared_ptr<const PoolSnapshot> small_pool() {
    KvCacheManager kv(KvCacheConfig{KvLayout({2, 2, 8}, KvDtype::F16, 4), 16, AllocationMode::Paged, true, 8, 0.0});
    const std::vector<TokenId> prompt{5, 6, 7, 8, 9, 10};
    kv.allocate(1, prompt, 8);
    kv.fork(1, 2);
    kv.allocate(3, std::vector<TokenId>{1, 2, 3, 4}, 4);
    kv.free(3); // its full block stays cached
    return kv.snapshot();
}

// A hybrid pool (one full-attention layer, one with a 4-token window: two
// KV cache groups, block size 4): sequence 1's 12-token prompt, computed
// chunk by chunk, leaves its first window blocks behind; sequence 2 ends
// and leaves its full blocks cached. keep_whole: the window group keeps
// every block instead (--swa-full).
std::shared_ptr<const PoolSnapshot> hybrid_pool(bool keep_whole) {
    const std::vector<std::uint32_t> windows{4, 0};
    KvCacheConfig config{KvLayout({2, 2, 8}, KvDtype::F16, 4, KvGroups::from_windows(windows, keep_whole)), 16,
                         AllocationMode::Paged, true, 8, 0.0};
    config.chunk_tokens = 4;
    KvCacheManager kv(config);
    std::vector<TokenId> prompt(12);
    for (std::size_t i = 0; i < prompt.size(); ++i)
        prompt[i] = static_cast<TokenId>(100 + i);
    kv.allocate(1, prompt, 4);
    for (std::uint32_t end = 4; end <= 12; end += 4) {
        kv.cover(1, end);
        kv.release_out_of_window(1, end);
    }
    kv.allocate(2, std::vector<TokenId>{1, 2, 3, 4, 5}, 4);
    kv.cover(2, 5);
    kv.free(2);
    return kv.snapshot();
}

EngineSnapshot hand_made_snapshot() {
    EngineSnapshot s;
    s.step = 7;
    s.time_s = 1.25;
    s.device = {Backend::Cuda, MemoryPlace::Cuda, "NVIDIA H200", 150'000'000'000, 120'000'000'000};
    s.pool = small_pool();
    s.seqs = {{1, 1, 0, SeqStatus::Running, 6, 1}, {2, 1, 1, SeqStatus::Running, 6, 1},
              {4, 2, 0, SeqStatus::Waiting, 9, 0, 0}};
    s.ended_seqs = {{3, 3}}; // small_pool's cached block names sequence 3
    s.running = 2;
    s.waiting = 1;
    s.ttft = {12.5, 40};
    s.itl = {3, 4.5};
    return s;
}

// docs/snapshot.md: each "### `name`" section's table rows "| `key` | ...".
std::map<std::string, std::vector<std::string>> documented_keys() {
    QFile doc(QStringLiteral(KVSCOPE_SNAPSHOT_DOC));
    if (!doc.open(QIODevice::ReadOnly | QIODevice::Text))
        qFatal("cannot read %s", KVSCOPE_SNAPSHOT_DOC);
    std::map<std::string, std::vector<std::string>> keys;
    std::string section;
    static const QRegularExpression heading(QStringLiteral("^### `(\\w+)`"));
    static const QRegularExpression row(QStringLiteral("^\\| `(\\w+)` \\|"));
    for (const QString& line : QString::fromUtf8(doc.readAll()).split(QLatin1Char('\n'))) {
        if (const auto m = heading.match(line); m.hasMatch())
            section = m.captured(1).toStdString();
        else if (const auto r = row.match(line); r.hasMatch() && !section.empty())
            keys[section].push_back(r.captured(1).toStdString());
    }
    return keys;
}

QString joined(const std::vector<std::string>& words) {
    QStringList list;
    for (const std::string& w : words)
        list << QString::fromStdString(w);
    return list.join(QLatin1Char(' '));
}

QString keys_of(const Json& object) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : object.items())
        keys.push_back(key);
    return joined(keys);
}

// Each object of the JSON, under the name of its documented section.
std::multimap<std::string, const Json*> objects_of(const Json& j) {
    std::multimap<std::string, const Json*> objects{
        {"snapshot", &j}, {"device", &j["device"]}, {"latency", &j["ttft"]}, {"latency", &j["itl"]}};
    for (const Json& s : j["seqs"])
        objects.emplace("seq", &s);
    for (const Json& e : j["ended_seqs"])
        objects.emplace("ended_seq", &e);
    const Json& pool = j["pool"];
    objects.insert({{"pool", &pool}, {"layout", &pool["layout"]}, {"fragmentation", &pool["fragmentation"]}});
    for (const Json& b : pool["blocks"])
        objects.emplace("block", &b);
    for (const Json& s : pool["sequences"])
        objects.emplace("sequence", &s);
    return objects;
}

} // namespace

class TestSnapshotJson : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void a_running_engine_round_trips_data();
    void a_running_engine_round_trips();
    void keys_are_exactly_the_documented_ones();
    void a_hybrid_pool_round_trips_data();
    void a_hybrid_pool_round_trips();
    void unknown_values_are_null();
    void request_counts_round_trip();
    void bad_input_is_refused_data();
    void bad_input_is_refused();

private:
    QTemporaryDir dir_;
    std::shared_ptr<const Model> model_; // random weights, stories260K's vocabulary size and context
};

void TestSnapshotJson::initTestCase() {
    QVERIFY(dir_.isValid());
    const std::string path = dir_.filePath("tiny.gguf").toStdString();
    write_synthetic_model({"tiny", "llama", 64, 2, 4, 2, 128, 512, 512, true, false}, GgmlType::F32, 1, path);
    model_ = std::make_shared<const Model>(path);
}

void TestSnapshotJson::a_running_engine_round_trips_data() {
    QTest::addColumn<bool>("paged");
    QTest::newRow("paged") << true;
    QTest::newRow("contiguous") << false;
}

// Every snapshot of a run through admission, forks and (paged) swapping
// comes back from its JSON text as it was.
void TestSnapshotJson::a_running_engine_round_trips() {
    QFETCH(bool, paged);
    const AllocationMode mode = paged ? AllocationMode::Paged : AllocationMode::Contiguous;
    EngineConfig c = small_config(mode == AllocationMode::Paged ? 12 : 24, 8);
    c.allocation = mode;
    Engine engine(c, model_);
    RequestParams p;
    p.max_new_tokens = 40;
    p.ignore_eos = true;
    const std::vector<TokenId> system(20, 300);
    RequestId last = 0;
    for (TokenId t = 0; t < 4; ++t) {
        std::vector<TokenId> prompt = system;
        prompt.push_back(400 + t);
        p.n = t == 0 ? 2 : 1;
        last = engine.add_request(prompt, p).id();
    }
    bool sawWaiting = false, sawShared = false, sawSwapped = false, sawEnded = false;
    for (;;) {
        const auto snap = engine.snapshot(); // the first one before any step: all waiting
        compare_snapshots(*snap, through_text(*snap));
        QVERIFY(listed_ended(*snap) == ended_last_holders(*snap));
        if (QTest::currentTestFailed())
            return;
        sawEnded |= !snap->ended_seqs.empty();
        for (const SeqSnapshot& seq : snap->seqs) {
            const SequenceInfo* row = snap->kv_row(seq.seq);
            sawWaiting |= seq.status == SeqStatus::Waiting && !row;
            sawSwapped |= seq.status == SeqStatus::Swapped && row && row->swapped;
        }
        for (const BlockInfo& b : snap->pool->blocks)
            sawShared |= b.state == BlockState::Shared;
        if (!engine.has_work())
            break;
        if (snap->step == 3)
            engine.abort(last); // an aborted request counted apart from the completed ones
        engine.step();
    }
    const auto end = engine.snapshot();
    QCOMPARE(end->completed_requests, std::uint64_t{3});
    QCOMPARE(end->aborted_requests, std::uint64_t{1});
    QVERIFY(sawWaiting);
    if (mode == AllocationMode::Paged) {
        QVERIFY2(sawShared, "the n = 2 request must share its prompt's blocks");
        QVERIFY2(sawSwapped, "the tight pool must swap a sequence out");
        QVERIFY2(sawEnded, "finished requests must leave their system prompt's blocks cached");
    }
}

void TestSnapshotJson::keys_are_exactly_the_documented_ones() {
    const auto documented = documented_keys();
    const Json j = to_json(hand_made_snapshot());
    std::set<std::string> checked;
    for (const auto& [section, object] : objects_of(j)) {
        QVERIFY2(documented.contains(section), section.c_str());
        QCOMPARE(keys_of(*object), joined(documented.at(section)));
        checked.insert(section);
    }
    QCOMPARE(checked.size(), documented.size()); // every documented object was seen
    QCOMPARE(j["schema_version"].get<int>(), kSnapshotSchemaVersion);
    compare_snapshots(hand_made_snapshot(), through_text(hand_made_snapshot()));
}

void TestSnapshotJson::a_hybrid_pool_round_trips_data() {
    QTest::addColumn<bool>("keep_whole");
    QTest::newRow("freeing") << false;
    QTest::newRow("keep whole") << true;
}

// The KV cache groups (the layout's windows, each block's group and
// left_window, each row's group_blocks) come back from the JSON text.
void TestSnapshotJson::a_hybrid_pool_round_trips() {
    QFETCH(bool, keep_whole);
    EngineSnapshot s;
    s.pool = hybrid_pool(keep_whole);
    const PoolSnapshot& pool = *s.pool;
    QCOMPARE(pool.layout.num_groups(), std::size_t{2});
    const SequenceInfo& row = pool.sequences.front();
    QCOMPARE(row.group_blocks.size(), std::size_t{2});
    const bool left = std::ranges::any_of(pool.blocks, [](const BlockInfo& b) { return b.left_window; });
    QCOMPARE(left, !keep_whole);
    QCOMPARE(row.left_window_blocks > 0, !keep_whole);
    QCOMPARE(row.group_blocks[0] != row.group_blocks[1], !keep_whole);
    QVERIFY(std::ranges::any_of(pool.blocks, [](const BlockInfo& b) { return b.group == 1; }));

    const Json j = to_json(s);
    QCOMPARE(j["pool"]["layout"]["layer_windows"].dump(), std::string("[4,0]"));
    QCOMPARE(j["pool"]["layout"]["keep_whole"].get<bool>(), keep_whole);
    compare_snapshots(s, through_text(s));
}

void TestSnapshotJson::unknown_values_are_null() {
    EngineSnapshot s;
    s.device = {Backend::Cpu, MemoryPlace::Host, std::nullopt, std::nullopt, std::nullopt};
    const Json j = to_json(s);
    QVERIFY(j["pool"].is_null());
    for (const char* key : {"name", "memory_total", "memory_free"})
        QVERIFY2(j["device"][key].is_null(), key);
    const EngineSnapshot back = through_text(s);
    QVERIFY(!back.pool);
    QVERIFY(!back.kv_row(1));
    compare_snapshots(s, back);
}

// Each way a request ends has its own key, each count comes back as it was.
void TestSnapshotJson::request_counts_round_trip() {
    EngineSnapshot s;
    s.completed_requests = 3;
    s.aborted_requests = 2;
    s.failed_requests = 1;
    s.refused_requests = 4;
    const Json j = to_json(s);
    QCOMPARE(j["completed_requests"].get<std::uint64_t>(), std::uint64_t{3});
    QCOMPARE(j["aborted_requests"].get<std::uint64_t>(), std::uint64_t{2});
    QCOMPARE(j["failed_requests"].get<std::uint64_t>(), std::uint64_t{1});
    compare_snapshots(s, through_text(s));
}

void TestSnapshotJson::bad_input_is_refused_data() {
    QTest::addColumn<QString>("change"); // a JSON pointer, then the new value as JSON, or "-" to remove
    QTest::addColumn<QString>("message");
    QTest::newRow("other version") << "/schema_version 99" << "schema_version 99";
    QTest::newRow("older version") << "/schema_version 1" << "schema_version 1";
    QTest::newRow("missing key") << "/running -" << "'running' is missing";
    QTest::newRow("wrong type") << "/step \"seven\"" << "'step' has the wrong type";
    QTest::newRow("unknown word") << "/seqs/0/status \"sleeping\"" << "\"sleeping\"";
    QTest::newRow("unknown dtype") << "/pool/layout/dtype \"f12\"" << "f12";
    QTest::newRow("block outside the pool") << "/pool/sequences/0/blocks/0 99" << "holds block 99 of a pool of 16";
    QTest::newRow("overfull block") << "/pool/blocks/0/fill 5" << "holds 5 tokens, more than its 4 slots";
    QTest::newRow("held block with a last holder") << "/pool/blocks/0/last_holder 3" << "only cached_free blocks";
    QTest::newRow("rows out of order") << "/pool/sequences/1/id 0" << "ascending id";
    QTest::newRow("not an array") << "/seqs {}" << "'seqs' is not an array";
}

void TestSnapshotJson::bad_input_is_refused() {
    QFETCH(QString, change);
    QFETCH(QString, message);
    Json j = to_json(hand_made_snapshot());
    const QString pointer = change.section(QLatin1Char(' '), 0, 0);
    const QString value = change.section(QLatin1Char(' '), 1);
    const Json::json_pointer at(pointer.toStdString());
    if (value == QStringLiteral("-"))
        j[at.parent_pointer()].erase(at.back());
    else
        j[at] = Json::parse(value.toStdString());
    try {
        engine_snapshot_from_json(j);
        QFAIL("the JSON was accepted");
    } catch (const Error& e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
    }
}

QTEST_GUILESS_MAIN(TestSnapshotJson)
#include "test_snapshot_json.moc"

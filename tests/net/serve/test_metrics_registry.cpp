// The server's Prometheus registry fed by hand-built snapshots: every
// series' value, counters moving by the totals' growth, histograms,
// vLLM names, and the text it serves read back by a strict parser (which is
// tested here too, on text it must refuse).
#include <QtTest>

#include <memory>
#include <string>
#include <thread>

#include "net/serve/metrics_registry.h"
#include "net/attach/prometheus_text.h"

using namespace kvscope;
using kvscope::serve::MetricsOptions;
using kvscope::serve::MetricsRegistry;
using kvscope::attach::parse_prometheus_text;
using kvscope::attach::PromLabels;
using kvscope::attach::PromText;
using kvscope::attach::PromTextError;

namespace {

constexpr std::uint32_t kBlockSize = 4;

KvLayout small_layout() { return KvLayout({.n_layers = 2, .n_kv_heads = 2, .head_dim = 8}, KvDtype::F16, kBlockSize); }

BlockInfo block(BlockState state, std::uint16_t fill, std::uint32_t refs) {
    BlockInfo b;
    b.state = state;
    b.fill = fill;
    b.ref_count = refs;
    return b;
}

// 8 blocks of 4 slots: a full and a one-token block held by one sequence, a
// full block two share, a prefix-cached free block, 4 free ones. Held: 3
// blocks (12 slots) with 9 tokens; 3 empty slots in them.
std::shared_ptr<const PoolSnapshot> small_pool(std::uint64_t prefix_queries, std::uint64_t prefix_hits) {
    auto pool = std::make_shared<PoolSnapshot>(PoolSnapshot{.mode = AllocationMode::Paged,
                                                            .layout = small_layout(),
                                                            .blocks = {},
                                                            .owners = {},
                                                            .sequences = {},
                                                            .fragmentation = {}});
    pool->blocks = {block(BlockState::Used, 4, 1), block(BlockState::Used, 1, 1), block(BlockState::Shared, 4, 2),
                    block(BlockState::CachedFree, 4, 0)};
    pool->blocks.resize(8, block(BlockState::Free, 0, 0));
    pool->fragmentation = compute_fragmentation(pool->blocks, kBlockSize, AllocationMode::Paged, 0);
    pool->prefix_query_tokens = prefix_queries;
    pool->prefix_hit_tokens = prefix_hits;
    return pool;
}

BlockInfo group_block(BlockState state, std::uint32_t refs, std::uint16_t group) {
    BlockInfo b = block(state, kBlockSize, refs);
    b.group = group;
    return b;
}

// A hybrid model's pool: 6 layers, 2 full-attention and 4 with an 8-token
// window, in 3 KV cache groups of 2 layers (kv_groups.h): group 0 the full
// layers, groups 1 and 2 the window layers. Of 8 blocks, group 0 holds two
// (one shared), groups 1 and 2 one each; a block group 1's window left
// behind is prefix-cached and free.
std::shared_ptr<const PoolSnapshot> hybrid_pool() {
    const std::vector<std::uint32_t> windows{8, 8, 0, 8, 8, 0};
    auto pool = std::make_shared<PoolSnapshot>(
        PoolSnapshot{.mode = AllocationMode::Paged,
                     .layout = KvLayout({.n_layers = 6, .n_kv_heads = 2, .head_dim = 8}, KvDtype::F16, kBlockSize,
                                        KvGroups::from_windows(windows)),
                     .blocks = {}, .owners = {}, .sequences = {}, .fragmentation = {}});
    pool->blocks = {group_block(BlockState::Used, 1, 1), group_block(BlockState::Used, 1, 2),
                    group_block(BlockState::Shared, 2, 0), group_block(BlockState::CachedFree, 0, 1),
                    group_block(BlockState::Used, 1, 0)};
    pool->blocks[3].left_window = true;
    pool->blocks.resize(8, block(BlockState::Free, 0, 0));
    pool->fragmentation = compute_fragmentation(pool->blocks, kBlockSize, AllocationMode::Paged, 0);
    return pool;
}

struct Totals {
    std::uint64_t preemptions, prompt, generated, prefix_queries, prefix_hits;
};

EngineSnapshot snapshot(const Totals& t, bool with_pool = true) {
    EngineSnapshot s;
    if (with_pool)
        s.pool = small_pool(t.prefix_queries, t.prefix_hits);
    s.running = 2;
    s.waiting = 1;
    s.swapped = 1;
    s.preemptions = t.preemptions;
    s.prompt_tokens = t.prompt;
    s.generated_tokens = t.generated;
    return s;
}

MetricsOptions options(bool vllm_names = false, const EngineConfig& engine = {}) {
    MetricsOptions o;
    o.model_name = "tiny";
    o.vllm_names = vllm_names;
    o.engine = engine;
    return o;
}

PromText scrape(const MetricsRegistry& metrics) { return parse_prometheus_text(metrics.serialize()); }

const PromLabels kCommon{{"model_name", "tiny"}, {"engine", "0"}};

double value(const PromText& text, const std::string& name, PromLabels labels = {}) {
    labels.insert(kCommon.begin(), kCommon.end());
    return text.value(name, labels);
}

// The five snapshot-fed counters, for one readable comparison.
std::string counters(const PromText& t) {
    const auto v = [&](const char* name) { return std::to_string(static_cast<long long>(value(t, name))); };
    return "preemptions " + v("kvscope:num_preemptions_total") + ", prompt " + v("kvscope:prompt_tokens_total") +
           ", generation " + v("kvscope:generation_tokens_total") + ", prefix queries " +
           v("kvscope:prefix_cache_queries_total") + ", hits " + v("kvscope:prefix_cache_hits_total");
}

} // namespace

class TestMetricsRegistry : public QObject {
    Q_OBJECT
private slots:
    void gauges_read_the_pool_with_cached_blocks_free();
    void every_sample_carries_model_name_and_engine();
    void counters_move_by_the_totals_growth();
    void a_total_that_falls_is_a_new_engine();
    void a_pool_less_snapshot_keeps_the_prefix_counters();
    void histograms_use_vllm_buckets();
    void requests_count_by_finished_reason();
    void cache_config_info_describes_the_pool();
    void group_usage_splits_the_usage_by_group();
    void vllm_names_mirror_the_vllm_series_only();
    void scrapes_run_beside_the_engine_thread();
    void parser_reads_the_format();
    void parser_refuses_malformed_text_data();
    void parser_refuses_malformed_text();
};

void TestMetricsRegistry::gauges_read_the_pool_with_cached_blocks_free() {
    MetricsRegistry metrics(options());
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 0, 0, 0, 0})));
    const PromText t = scrape(metrics);
    QCOMPARE(value(t, "kvscope:num_requests_running"), 2.0);
    QCOMPARE(value(t, "kvscope:num_requests_waiting"), 2.0); // waiting + swapped
    QCOMPARE(value(t, "kvscope:kv_cache_usage_perc"), 3.0 / 8); // the cached block is free
    QCOMPARE(value(t, "kvscope:kv_cache_token_usage_perc"), 9.0 / 32);
    QCOMPARE(value(t, "kvscope:kv_internal_waste_perc"), 3.0 / 32);
    QCOMPARE(value(t, "kvscope:kv_cache_usage_perc") - value(t, "kvscope:kv_cache_token_usage_perc"),
             value(t, "kvscope:kv_internal_waste_perc"));
    QCOMPARE(value(t, "kvscope:kv_free_blocks"), 5.0);
    QCOMPARE(value(t, "kvscope:kv_cached_blocks"), 1.0);
    QCOMPARE(value(t, "kvscope:kv_available_tokens"), 20.0);
    // 2 layers x K,V x 2 heads x 8 values x 2 bytes.
    QCOMPARE(value(t, "kvscope:kv_bytes_per_token"), 128.0);
    QCOMPARE(value(t, "kvscope:kv_bytes_per_token"), static_cast<double>(small_layout().bytes_per_token()));
    QCOMPARE(t.types.at("kvscope:kv_cache_usage_perc"), std::string("gauge"));
    // One KV cache group: its usage is the whole.
    QCOMPARE(t.find("kvscope:kv_cache_group_usage_perc").size(), std::size_t{1});
    QCOMPARE(value(t, "kvscope:kv_cache_group_usage_perc", {{"group", "0"}, {"kind", "full_attention"}}), 3.0 / 8);
}

void TestMetricsRegistry::every_sample_carries_model_name_and_engine() {
    MetricsRegistry metrics(options(true));
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({1, 1, 1, 1, 1})));
    metrics.on_first_token(0.1);
    const PromText t = scrape(metrics);
    QVERIFY(t.samples.size() > 50);
    for (const auto& s : t.samples) {
        QVERIFY2(s.labels.at("model_name") == "tiny", s.name.c_str());
        QVERIFY2(s.labels.at("engine") == "0", s.name.c_str());
    }
}

void TestMetricsRegistry::counters_move_by_the_totals_growth() {
    MetricsRegistry metrics(options());
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({1, 10, 5, 8, 4})));
    QCOMPARE(counters(scrape(metrics)), std::string("preemptions 1, prompt 10, generation 5, prefix queries 8, hits 4"));
    QCOMPARE(scrape(metrics).types.at("kvscope:prompt_tokens_total"), std::string("counter"));

    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({3, 15, 9, 12, 8})));
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({3, 15, 9, 12, 8}))); // no growth: no change
    QCOMPARE(counters(scrape(metrics)), std::string("preemptions 3, prompt 15, generation 9, prefix queries 12, hits 8"));
}

void TestMetricsRegistry::a_total_that_falls_is_a_new_engine() {
    MetricsRegistry metrics(options());
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({3, 15, 9, 12, 8})));
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 2, 1, 4, 0}))); // a new engine counting from zero
    QCOMPARE(counters(scrape(metrics)), std::string("preemptions 3, prompt 17, generation 10, prefix queries 16, hits 8"));
}

void TestMetricsRegistry::a_pool_less_snapshot_keeps_the_prefix_counters() {
    MetricsRegistry metrics(options());
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 10, 0, 8, 4})));
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 12, 0, 0, 0}, false))); // knows no prefix figures
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 14, 0, 10, 5})));
    const PromText t = scrape(metrics);
    QCOMPARE(value(t, "kvscope:prompt_tokens_total"), 14.0);
    QCOMPARE(value(t, "kvscope:prefix_cache_queries_total"), 10.0); // not 8 + 10
    QCOMPARE(value(t, "kvscope:prefix_cache_hits_total"), 5.0);
}

void TestMetricsRegistry::histograms_use_vllm_buckets() {
    MetricsRegistry metrics(options());
    for (double ttft : {0.003, 0.05, 3000.0})
        metrics.on_first_token(ttft);
    metrics.on_inter_token(0.02);
    metrics.on_inter_token(0.02);
    metrics.on_request_end(FinishReason::Stop, 0.4);
    const PromText t = scrape(metrics);
    QCOMPARE(t.types.at("kvscope:time_to_first_token_seconds"), std::string("histogram"));
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_count"), 3.0);
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_sum"), 3000.053);
    const auto ttft = t.buckets("kvscope:time_to_first_token_seconds", kCommon);
    QCOMPARE(ttft.size(), std::size_t{23}); // vLLM's 22 bounds and +Inf
    QCOMPARE(ttft.front(), std::make_pair(0.001, 0.0));
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_bucket", {{"le", "0.005"}}), 1.0);
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_bucket", {{"le", "0.06"}}), 2.0);
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_bucket", {{"le", "2560"}}), 2.0);
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_bucket", {{"le", "+Inf"}}), 3.0);

    const auto itl = t.buckets("kvscope:inter_token_latency_seconds", kCommon);
    QCOMPARE(itl.size(), std::size_t{20});
    QCOMPARE(itl.front(), std::make_pair(0.01, 0.0));
    QCOMPARE(itl[1], std::make_pair(0.025, 2.0));
    QCOMPARE(value(t, "kvscope:inter_token_latency_seconds_sum"), 0.04);

    const auto e2e = t.buckets("kvscope:e2e_request_latency_seconds", kCommon);
    QCOMPARE(e2e.size(), std::size_t{22});
    QCOMPARE(e2e.front(), std::make_pair(0.3, 0.0));
    QCOMPARE(e2e[1], std::make_pair(0.5, 1.0));
    QCOMPARE(e2e[e2e.size() - 2].first, 7680.0);
}

void TestMetricsRegistry::requests_count_by_finished_reason() {
    MetricsRegistry metrics(options());
    PromText t = scrape(metrics);
    for (const char* reason : {"stop", "length", "abort", "error"}) // there, at 0, before any request
        QCOMPARE(value(t, "kvscope:request_success_total", {{"finished_reason", reason}}), 0.0);
    metrics.on_request_end(FinishReason::Stop, 1);
    metrics.on_request_end(FinishReason::Stop, 2);
    metrics.on_request_end(FinishReason::Length, 3);
    metrics.on_request_end(FinishReason::Error, 0.1);
    t = scrape(metrics);
    QCOMPARE(value(t, "kvscope:request_success_total", {{"finished_reason", "stop"}}), 2.0);
    QCOMPARE(value(t, "kvscope:request_success_total", {{"finished_reason", "length"}}), 1.0);
    QCOMPARE(value(t, "kvscope:request_success_total", {{"finished_reason", "abort"}}), 0.0);
    QCOMPARE(value(t, "kvscope:request_success_total", {{"finished_reason", "error"}}), 1.0);
    QCOMPARE(value(t, "kvscope:e2e_request_latency_seconds_count"), 4.0);
}

void TestMetricsRegistry::cache_config_info_describes_the_pool() {
    EngineConfig engine;
    engine.prefix_caching = false;
    MetricsRegistry metrics(options(false, engine));
    QVERIFY(!scrape(metrics).has("kvscope:cache_config_info")); // no pool seen yet
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 0, 0, 0, 0})));
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 0, 0, 0, 0})));
    const PromText t = scrape(metrics);
    const auto info = t.find("kvscope:cache_config_info");
    QCOMPARE(info.size(), std::size_t{1});
    const PromLabels& l = info.front()->labels;
    QCOMPARE(info.front()->value, 1.0);
    QCOMPARE(l.at("block_size"), std::string("4"));
    QCOMPARE(l.at("cache_dtype"), std::string("f16"));
    QCOMPARE(l.at("num_gpu_blocks"), std::string("8"));
    QCOMPARE(l.at("bytes_per_token"), std::string("128"));
    QCOMPARE(l.at("kv_cache_memory_bytes"), std::to_string(8 * small_layout().bytes_per_block()));
    QCOMPARE(l.at("enable_prefix_caching"), std::string("False"));
}

void TestMetricsRegistry::group_usage_splits_the_usage_by_group() {
    MetricsRegistry metrics(options(true));
    EngineSnapshot s;
    s.pool = hybrid_pool();
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(s));
    const PromText t = scrape(metrics);
    QCOMPARE(value(t, "kvscope:kv_cache_usage_perc"), 4.0 / 8); // the total, as before
    const auto usage = [&](const char* group, const char* kind) {
        return value(t, "kvscope:kv_cache_group_usage_perc", {{"group", group}, {"kind", kind}});
    };
    QCOMPARE(usage("0", "full_attention"), 2.0 / 8);
    QCOMPARE(usage("1", "sliding_window_8"), 1.0 / 8); // its left-behind cached block is free
    QCOMPARE(usage("2", "sliding_window_8"), 1.0 / 8);
    QCOMPARE(t.find("kvscope:kv_cache_group_usage_perc").size(), std::size_t{3});
    QCOMPARE(usage("0", "full_attention") + usage("1", "sliding_window_8") + usage("2", "sliding_window_8"),
             value(t, "kvscope:kv_cache_usage_perc"));
    QCOMPARE(t.types.at("kvscope:kv_cache_group_usage_perc"), std::string("gauge"));
    QVERIFY(!t.has("vllm:kv_cache_group_usage_perc")); // vLLM has no such series

    // Another layout (a new engine): the old groups' series go.
    metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({0, 0, 0, 0, 0})));
    const PromText dense = scrape(metrics);
    QCOMPARE(dense.find("kvscope:kv_cache_group_usage_perc").size(), std::size_t{1});
    QCOMPARE(value(dense, "kvscope:kv_cache_group_usage_perc", {{"group", "0"}, {"kind", "full_attention"}}),
             3.0 / 8);
}

void TestMetricsRegistry::vllm_names_mirror_the_vllm_series_only() {
    const std::vector<std::string> vllm_series{
        "num_requests_running",       "num_requests_waiting",    "kv_cache_usage_perc",
        "num_preemptions_total",      "prefix_cache_queries_total", "prefix_cache_hits_total",
        "prompt_tokens_total",        "generation_tokens_total", "time_to_first_token_seconds_count",
        "inter_token_latency_seconds_count", "e2e_request_latency_seconds_count", "cache_config_info"};
    const std::vector<std::string> own_series{"kv_cache_token_usage_perc", "kv_internal_waste_perc", "kv_free_blocks",
                                              "kv_cached_blocks", "kv_available_tokens", "kv_bytes_per_token",
                                              "kv_cache_group_usage_perc"};
    for (bool vllm_names : {false, true}) {
        MetricsRegistry metrics(options(vllm_names));
        metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({1, 10, 5, 8, 4})));
        metrics.on_request_end(FinishReason::Length, 1);
        const PromText t = scrape(metrics);
        for (const auto& name : vllm_series) {
            QVERIFY2(t.has("kvscope:" + name), name.c_str());
            QCOMPARE(t.has("vllm:" + name), vllm_names);
            if (vllm_names && name != "cache_config_info")
                QCOMPARE(value(t, "vllm:" + name), value(t, "kvscope:" + name));
        }
        QCOMPARE(t.has("vllm:request_success_total", {{"finished_reason", "length"}}), vllm_names);
        for (const auto& name : own_series) {
            QVERIFY2(t.has("kvscope:" + name), name.c_str());
            QVERIFY2(!t.has("vllm:" + name), name.c_str());
        }
    }
}

void TestMetricsRegistry::scrapes_run_beside_the_engine_thread() {
    MetricsRegistry metrics(options(true));
    constexpr std::uint64_t kSnapshots = 300;
    std::thread engine([&] {
        for (std::uint64_t i = 1; i <= kSnapshots; ++i) {
            metrics.on_snapshot(std::make_shared<const EngineSnapshot>(snapshot({i, 10 * i, 5 * i, 8 * i, 4 * i})));
            metrics.on_first_token(0.01);
            metrics.on_request_end(FinishReason::Stop, 0.5);
        }
    });
    double last_prompt = 0;
    for (int scrape_index = 0; scrape_index < 30; ++scrape_index) {
        const PromText t = scrape(metrics); // parses: every histogram consistent mid-update
        const double prompt = value(t, "kvscope:prompt_tokens_total");
        QVERIFY(prompt >= last_prompt);
        last_prompt = prompt;
    }
    engine.join();
    const PromText t = scrape(metrics);
    QCOMPARE(value(t, "kvscope:prompt_tokens_total"), 10.0 * kSnapshots);
    QCOMPARE(value(t, "vllm:prompt_tokens_total"), 10.0 * kSnapshots);
    QCOMPARE(value(t, "kvscope:request_success_total", {{"finished_reason", "stop"}}), double(kSnapshots));
    QCOMPARE(value(t, "kvscope:time_to_first_token_seconds_count"), double(kSnapshots));
}

void TestMetricsRegistry::parser_reads_the_format() {
    const PromText t = parse_prometheus_text("# HELP a_total Line one\\nback \\\\ slash\n"
                                             "# TYPE a_total counter\n"
                                             "# a plain comment\n"
                                             "\n"
                                             "a_total{x=\"q\\\"\\n\\\\\",y=\"2\",} 3 1700000000000\n"
                                             "b:c NaN\n"
                                             "d -Inf\n"
                                             "e{} 1.5e3\n");
    QCOMPARE(t.help.at("a_total"), std::string("Line one\nback \\ slash"));
    QCOMPARE(t.value("a_total", {{"x", "q\"\n\\"}}), 3.0);
    QCOMPARE(*t.find("a_total").front()->timestamp_ms, std::int64_t{1700000000000});
    QVERIFY(std::isnan(t.value("b:c")));
    QCOMPARE(t.value("d"), -std::numeric_limits<double>::infinity());
    QCOMPARE(t.value("e"), 1500.0);
    QVERIFY_THROWS_EXCEPTION(PromTextError, t.value("missing"));
}

void TestMetricsRegistry::parser_refuses_malformed_text_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("line");
    QTest::newRow("name starts with a digit") << "ok 1\n1a 2\n" << 2;
    QTest::newRow("no value") << "a\n" << 1;
    QTest::newRow("bad value") << "a 1x\n" << 1;
    QTest::newRow("bad timestamp") << "a 1 12.5\n" << 1;
    QTest::newRow("trailing text") << "a 1 12 x\n" << 1;
    QTest::newRow("unquoted label") << "a{x=1} 1\n" << 1;
    QTest::newRow("bad escape") << "a{x=\"\\t\"} 1\n" << 1;
    QTest::newRow("unterminated label") << "a{x=\"1} 1\n" << 1;
    QTest::newRow("label twice") << "a{x=\"1\",x=\"2\"} 1\n" << 1;
    QTest::newRow("colon in label name") << "a{x:y=\"1\"} 1\n" << 1;
    QTest::newRow("sample twice") << "a{x=\"1\"} 1\n\na{x=\"1\"} 2\n" << 3;
    QTest::newRow("unknown type") << "# TYPE a thing\n" << 1;
    QTest::newRow("type after samples") << "a 1\n# TYPE a gauge\n" << 2;
    QTest::newRow("type twice") << "# TYPE a gauge\n# TYPE a gauge\n" << 2;
    QTest::newRow("buckets not cumulative") << "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\n"
                                               "h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n"
                                            << 3;
    QTest::newRow("+Inf bucket != count") << "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n" << 4;
    QTest::newRow("no +Inf bucket") << "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_sum 1\nh_count 2\n" << 2;
    QTest::newRow("no count") << "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\n" << 2;
    QTest::newRow("bucket without le") << "# TYPE h histogram\nh_bucket 2\nh_sum 1\nh_count 2\n" << 2;
}

void TestMetricsRegistry::parser_refuses_malformed_text() {
    QFETCH(QString, text);
    QFETCH(int, line);
    try {
        parse_prometheus_text(text.toStdString());
        QFAIL("parsed");
    } catch (const PromTextError& e) {
        const std::string prefix = "line " + std::to_string(line) + ": ";
        QVERIFY2(std::string_view(e.what()).starts_with(prefix), e.what());
    }
}

QTEST_GUILESS_MAIN(TestMetricsRegistry)
#include "test_metrics_registry.moc"

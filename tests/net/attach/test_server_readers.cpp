// The readers of net/attach/server_readers.h on recorded answers: kvscope's
// own snapshot JSON (engine/snapshot_json's to_json of a snapshot) and
// /metrics (its real MetricsRegistry's text), llama.cpp's /props, /slots
// (both shapes of next_token) and /metrics, vLLM's /metrics with two
// ranks, cache_config_info and histograms. Counter resets, malformed lines
// and JSON; the last minute fed as explicit times.
#include <QtTest>
#include <QTemporaryDir>

#include <algorithm>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "net/attach/server_readers.h"
#include "net/serve/metrics_registry.h"
#include "engine/kv/fragmentation.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/model/synthetic_model.h"
#include "engine/snapshot_json.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::attach;

namespace {

bool has_fault(const std::vector<std::string>& faults, std::string_view part) {
    return std::ranges::any_of(faults, [&](const std::string& f) { return f.find(part) != std::string::npos; });
}

bool near(std::optional<double> v, double want, double tol = 1e-9) { return v && std::abs(*v - want) <= tol; }

// --- kvscope ---------------------------------------------------------------

constexpr std::uint32_t kBlockSize = 4;

// A real KV cache's picture: 8 blocks of 4 slots, two sequences holding 5
// and 4 prompt tokens (3 blocks, 9 tokens).
EngineSnapshot kvscope_snapshot(std::uint64_t prompt, std::uint64_t generated, std::uint64_t queries,
                                std::uint64_t hits) {
    KvCacheManager kv({.layout = KvLayout({.n_layers = 2, .n_kv_heads = 2, .head_dim = 8}, KvDtype::F16, kBlockSize),
                       .num_blocks = 8});
    const std::vector<TokenId> first{1, 2, 3, 4, 5}, second{6, 7, 8, 9};
    kv.allocate(1, first, 4);
    kv.allocate(2, second, 4);
    auto pool = std::make_shared<PoolSnapshot>(*kv.snapshot());
    pool->prefix_query_tokens = queries;
    pool->prefix_hit_tokens = hits;
    EngineSnapshot s;
    s.pool = std::move(pool);
    s.running = 2;
    s.waiting = 1;
    s.swapped = 1;
    s.preemptions = 3;
    s.prompt_tokens = prompt;
    s.generated_tokens = generated;
    return s;
}

std::string json_of(const EngineSnapshot& s) { return to_json(s).dump(); }

// --- llama.cpp -------------------------------------------------------------

// /props as tools/server/server-context.cpp's get_props sends it.
std::string llama_props(const std::string& model_path) {
    nlohmann::json j = {{"default_generation_settings", {{"n_ctx", 4096}, {"params", {{"n_predict", -1}}}}},
                        {"total_slots", 2},
                        {"model_alias", "tiny"},
                        {"model_path", model_path},
                        {"build_info", "b7000-abc"}};
    return j.dump();
}

// /slots from a current server: next_token as a one-element array,
// n_prompt_tokens the slot's cached tokens (prompt and generated).
const char* kSlotsNew = R"([
  {"id":0,"n_ctx":4096,"speculative":false,"is_processing":true,"id_task":7,
   "n_prompt_tokens":130,"n_prompt_tokens_processed":90,"n_prompt_tokens_cache":20,
   "params":{"n_predict":64},
   "next_token":[{"has_next_token":true,"has_new_line":false,"n_remain":44,"n_decoded":20}]},
  {"id":1,"n_ctx":4096,"speculative":false,"is_processing":false,"id_task":3,
   "n_prompt_tokens":300,"n_prompt_tokens_processed":0,"n_prompt_tokens_cache":0,
   "params":{},"next_token":[{"has_next_token":false,"has_new_line":false,"n_remain":-1,"n_decoded":0}]}
])";

// /slots as the README shows it: next_token an object, n_prompt_tokens the
// task's prompt, n_decoded apart; and a slot that never ran.
const char* kSlotsReadme = R"([
  {"id":1,"n_ctx":1024,"is_processing":true,"id_task":2,"n_prompt_tokens":100,
   "next_token":{"has_next_token":true,"has_new_line":false,"n_remain":10,"n_decoded":5}},
  {"id":0,"n_ctx":1024,"is_processing":false}
])";

const char* kSlotsFork = R"([{"id":0,"n_ctx":2048,"is_processing":true,"n_past":77}])";

// The total a reader gives for these slots of a model trained on n_ctx_train.
ServerFigures llama_figures(std::uint32_t n_ctx_train, std::string_view slots_json,
                            std::optional<bool> kv_unified = std::nullopt) {
    LlamaCppReader reader("f16", kv_unified);
    reader.read_models(R"({"data":[{"id":"tiny","meta":{"n_ctx_train":)" + std::to_string(n_ctx_train) + "}}]}");
    reader.read_slots(slots_json, 0);
    RemoteSample sample;
    reader.fill(sample);
    return sample.total;
}

std::string llama_metrics(double prompt, double predicted, double processing, double deferred) {
    return "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
           "# TYPE llamacpp:prompt_tokens_total counter\n"
           "llamacpp:prompt_tokens_total " + std::to_string(prompt) + "\n"
           "# TYPE llamacpp:tokens_predicted_total counter\n"
           "llamacpp:tokens_predicted_total " + std::to_string(predicted) + "\n"
           "# TYPE llamacpp:requests_processing gauge\n"
           "llamacpp:requests_processing " + std::to_string(processing) + "\n"
           "# TYPE llamacpp:requests_deferred gauge\n"
           "llamacpp:requests_deferred " + std::to_string(deferred) + "\n";
}

// --- vLLM ------------------------------------------------------------------

struct RankState {
    double usage, running, waiting, preemptions, queries, hits, prompt, generation;
    std::vector<double> ttft; // cumulative counts at le 0.1, 0.5, 1, +Inf
};

// Two ranks' series as prometheus_client writes them (with _created
// samples), cache_config_info with every label a string.
std::string vllm_metrics(const RankState& r0, const RankState& r1) {
    std::string out;
    const auto series = [&](const std::string& name, const std::string& type, auto value) {
        out += "# HELP " + name + " help\n# TYPE " + name + " " + type + "\n";
        for (int rank : {0, 1})
            out += name + "{engine=\"" + std::to_string(rank) + "\",model_name=\"org/model\"} " +
                   std::to_string(value(rank == 0 ? r0 : r1)) + "\n";
    };
    series("vllm:kv_cache_usage_perc", "gauge", [](const RankState& r) { return r.usage; });
    series("vllm:num_requests_running", "gauge", [](const RankState& r) { return r.running; });
    series("vllm:num_requests_waiting", "gauge", [](const RankState& r) { return r.waiting; });
    series("vllm:num_preemptions_total", "counter", [](const RankState& r) { return r.preemptions; });
    series("vllm:num_preemptions_created", "gauge", [](const RankState&) { return 1.7e9; });
    series("vllm:prefix_cache_queries_total", "counter", [](const RankState& r) { return r.queries; });
    series("vllm:prefix_cache_hits_total", "counter", [](const RankState& r) { return r.hits; });
    series("vllm:prompt_tokens_total", "counter", [](const RankState& r) { return r.prompt; });
    series("vllm:generation_tokens_total", "counter", [](const RankState& r) { return r.generation; });
    out += "# TYPE vllm:time_to_first_token_seconds histogram\n";
    for (int rank : {0, 1}) {
        const RankState& r = rank == 0 ? r0 : r1;
        const std::string labels = "engine=\"" + std::to_string(rank) + "\",model_name=\"org/model\"";
        const char* les[] = {"0.1", "0.5", "1.0", "+Inf"};
        for (int i = 0; i < 4; ++i)
            out += "vllm:time_to_first_token_seconds_bucket{" + labels + ",le=\"" + les[i] + "\"} " +
                   std::to_string(r.ttft[i]) + "\n";
        out += "vllm:time_to_first_token_seconds_count{" + labels + "} " + std::to_string(r.ttft[3]) + "\n";
        out += "vllm:time_to_first_token_seconds_sum{" + labels + "} 1.0\n";
    }
    out += "# TYPE vllm:cache_config_info gauge\n";
    out += "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"fp8_e4m3\",enable_prefix_caching=\"True\","
           "engine=\"0\",gpu_memory_utilization=\"0.9\",kv_cache_memory_bytes=\"1048576000\","
           "num_cpu_blocks=\"None\",num_gpu_blocks=\"1000\"} 1.0\n";
    out += "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"fp8_e4m3\",enable_prefix_caching=\"True\","
           "engine=\"1\",gpu_memory_utilization=\"0.9\",kv_cache_memory_bytes=\"3145728000\","
           "num_cpu_blocks=\"None\",num_gpu_blocks=\"3000\"} 1.0\n";
    return out;
}

} // namespace

class TestServerReaders : public QObject {
    Q_OBJECT

private slots:
    // kvscope -----------------------------------------------------------

    void kvscope_snapshot_fills_the_figures() {
        KvscopeReader reader;
        const EngineSnapshot s = kvscope_snapshot(100, 50, 0, 0);
        reader.read_snapshot(json_of(s), 0);
        reader.read_models(R"({"object":"list","data":[{"id":"stories","object":"model"}]})");
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QVERIFY(sample.engine);
        QCOMPARE(sample.engine->pool->blocks.size(), s.pool->blocks.size());
        QCOMPARE(sample.model, std::optional<std::string>("stories"));
        const ServerFigures& f = sample.total;
        const FragmentationStats& frag = s.pool->fragmentation;
        QCOMPARE(f.kv_blocks_total, std::optional<std::uint64_t>(8));
        QCOMPARE(f.kv_blocks_used, std::optional<std::uint64_t>(3));
        QCOMPARE(f.kv_tokens_used, std::optional<std::uint64_t>(9));
        QCOMPARE(f.kv_tokens_capacity, std::optional<std::uint64_t>(32));
        QVERIFY(near(f.kv_usage, frag.block_occupancy()));
        QCOMPARE(f.block_size, std::optional<std::uint32_t>(kBlockSize));
        QCOMPARE(f.kv_dtype, std::optional<std::string>("f16"));
        QCOMPARE(f.kv_bytes_per_token, std::optional<std::uint64_t>(s.pool->layout.bytes_per_token()));
        QCOMPARE(f.running, std::optional<double>(2));
        QCOMPARE(f.waiting, std::optional<double>(2)); // waiting + swapped, as its /metrics
        QCOMPARE(f.preemptions, std::optional<double>(3));
        QVERIFY(!f.ttft.p50_ms); // no /metrics read: unknown, not 0
        QVERIFY(!f.prefix_hit_rate);
    }

    void kvscope_rates_and_latency_from_its_own_metrics() {
        serve::MetricsOptions options;
        options.model_name = "stories";
        serve::MetricsRegistry registry(options);
        KvscopeReader reader;
        registry.on_snapshot(std::make_shared<const EngineSnapshot>(kvscope_snapshot(0, 0, 0, 0)));
        reader.read_snapshot(json_of(kvscope_snapshot(0, 0, 0, 0)), 0);
        reader.read_metrics(registry.serialize(), 0);
        for (int i = 0; i < 10; ++i) {
            registry.on_first_token(0.05); // bucket (0.04, 0.06]
            registry.on_inter_token(0.03); // bucket (0.025, 0.05]
        }
        registry.on_snapshot(std::make_shared<const EngineSnapshot>(kvscope_snapshot(600, 300, 100, 25)));
        reader.read_snapshot(json_of(kvscope_snapshot(600, 300, 100, 25)), 30);
        reader.read_metrics(registry.serialize(), 30);
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        const ServerFigures& f = sample.total;
        QVERIFY(near(f.prompt_tokens_per_s, 20.0));
        QVERIFY(near(f.generation_tokens_per_s, 10.0));
        QVERIFY(near(f.prefix_hit_rate, 0.25));
        QVERIFY(near(f.ttft.p50_ms, 50.0, 1e-6));
        QVERIFY(near(f.ttft.p99_ms, 40.0 + 20.0 * 9.9 / 10, 1e-6));
        QVERIFY(near(f.itl.p50_ms, 25.0 + 25.0 * 5 / 10, 1e-6));
    }

    void kvscope_bad_snapshot_keeps_the_last_one() {
        KvscopeReader reader;
        reader.read_snapshot(json_of(kvscope_snapshot(10, 5, 0, 0)), 0);
        reader.read_snapshot("{\"schema_version\": 2, \"step\": ", 1);
        nlohmann::ordered_json wrong = to_json(kvscope_snapshot(10, 5, 0, 0));
        wrong.erase("running");
        reader.read_snapshot(wrong.dump(), 2);
        const auto faults = reader.take_faults();
        QCOMPARE(faults.size(), std::size_t{2});
        QVERIFY(has_fault(faults, "malformed JSON"));
        QVERIFY2(has_fault(faults, "running"), faults.back().c_str());
        RemoteSample sample;
        reader.fill(sample);
        QCOMPARE(sample.total.kv_tokens_used, std::optional<std::uint64_t>(9));
        QVERIFY(reader.take_faults().empty()); // taken once
    }

    void kvscope_restart_is_a_fault() {
        KvscopeReader reader;
        reader.read_snapshot(json_of(kvscope_snapshot(1000, 500, 0, 0)), 0);
        reader.read_snapshot(json_of(kvscope_snapshot(10, 5, 0, 0)), 1);
        QVERIFY(has_fault(reader.take_faults(), "counters reset"));
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(!sample.total.prompt_tokens_per_s); // no rate across the restart
    }

    // llama.cpp -----------------------------------------------------------

    void llama_slots_with_next_token_as_array() {
        LlamaCppReader reader;
        reader.read_props(llama_props("/nonexistent/model.gguf"));
        reader.read_slots(kSlotsNew, 0);
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QCOMPARE(sample.slot_samples.size(), std::size_t{2});
        const SlotSample& busy = sample.slot_samples[0];
        QCOMPARE(busy.n_ctx, 4096u);
        QVERIFY(busy.busy);
        QCOMPARE(busy.decoded, std::optional<std::uint32_t>(20));
        // n_prompt_tokens (130) is the slot's cache, generated tokens in it:
        // cache 20 + processed 90 + decoded 20 = 130, not 150.
        QCOMPARE(busy.tokens, 130u);
        QCOMPARE(busy.reserved_free(), 4096u - 130u);
        QCOMPARE(sample.slot_samples[1].tokens, 300u); // idle, still holding its prompt
        QVERIFY(!sample.slot_samples[1].busy);
        const ServerFigures& f = sample.total;
        QCOMPARE(f.kv_tokens_used, std::optional<std::uint64_t>(430));
        QCOMPARE(f.kv_dtype, std::optional<std::string>("f16"));
        QVERIFY(!f.kv_bytes_per_token); // the model file is not here
        QVERIFY(!f.kv_blocks_total);    // llama.cpp has no blocks
        QVERIFY(!f.preemptions);
        QCOMPARE(f.running, std::optional<double>(1)); // no /metrics: busy slots
        QVERIFY(!f.waiting);
        QCOMPARE(sample.model, std::optional<std::string>("tiny"));
    }

    void llama_slots_with_next_token_as_object_and_n_past() {
        LlamaCppReader reader;
        reader.read_slots(kSlotsReadme, 0);
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QCOMPARE(sample.slot_samples.size(), std::size_t{2});
        QCOMPARE(sample.slot_samples[0].id, 0); // sorted by id
        QCOMPARE(sample.slot_samples[0].tokens, 0u);
        QCOMPARE(sample.slot_samples[1].tokens, 105u); // prompt 100 + decoded 5
        QCOMPARE(sample.slot_samples[1].decoded, std::optional<std::uint32_t>(5));
        reader.read_slots(kSlotsFork, 1);
        reader.fill(sample);
        QCOMPARE(sample.slot_samples.size(), std::size_t{1});
        QCOMPARE(sample.slot_samples[0].tokens, 77u);
    }

    void llama_capacity_split_or_unified() {
        // Split (-np 2 -c 8192): two slots of 4096, holding 430 tokens.
        const ServerFigures split = llama_figures(32768, kSlotsNew);
        QCOMPARE(split.kv_tokens_capacity, std::optional<std::uint64_t>(8192));
        QVERIFY(near(split.kv_usage, 430.0 / 8192));
        // Split with slots capped at the training context (-np 2 -c 8192 on
        // a model trained on 4096): two slots is not -np auto, so split.
        const ServerFigures capped = llama_figures(4096, kSlotsNew);
        QCOMPARE(capped.kv_tokens_capacity, std::optional<std::uint64_t>(8192));
        // Unified (the default: -np auto = 4 slots, n_ctx = n_ctx_train):
        // every slot reports the whole shared context.
        const ServerFigures unified = llama_figures(4096, R"([
            {"id":0,"n_ctx":4096,"is_processing":true,"n_prompt_tokens":300},
            {"id":1,"n_ctx":4096,"is_processing":true,"n_prompt_tokens":130},
            {"id":2,"n_ctx":4096,"is_processing":false},
            {"id":3,"n_ctx":4096,"is_processing":false}])");
        QCOMPARE(unified.kv_tokens_capacity, std::optional<std::uint64_t>(4096));
        QVERIFY(near(unified.kv_usage, 430.0 / 4096));
        // The user's answer wins over the guess: -np 4 without -kvu, -np 2 with it.
        const ServerFigures four_split = llama_figures(4096, R"([
            {"id":0,"n_ctx":1024,"is_processing":true,"n_prompt_tokens":300},
            {"id":1,"n_ctx":1024,"is_processing":false},
            {"id":2,"n_ctx":1024,"is_processing":false},
            {"id":3,"n_ctx":1024,"is_processing":false}])", false);
        QCOMPARE(four_split.kv_tokens_capacity, std::optional<std::uint64_t>(4096));
        QCOMPARE(llama_figures(4096, kSlotsNew, true).kv_tokens_capacity, std::optional<std::uint64_t>(4096));
        // Slots holding more than one slot's n_ctx together cannot share it.
        const ServerFigures full = llama_figures(4096, R"([
            {"id":0,"n_ctx":4096,"is_processing":true,"n_prompt_tokens":3000},
            {"id":1,"n_ctx":4096,"is_processing":true,"n_prompt_tokens":3000}])");
        QCOMPARE(full.kv_tokens_capacity, std::optional<std::uint64_t>(8192));
    }

    void llama_metrics_rates_and_reset() {
        LlamaCppReader reader;
        reader.read_slots(kSlotsNew, 0);
        reader.read_metrics(llama_metrics(1000, 500, 1, 0), 0);
        reader.read_metrics(llama_metrics(4000, 2000, 2, 3), 60);
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QVERIFY(near(sample.total.prompt_tokens_per_s, 50.0));
        QVERIFY(near(sample.total.generation_tokens_per_s, 25.0));
        QCOMPARE(sample.total.running, std::optional<double>(2)); // requests_processing wins
        QCOMPARE(sample.total.waiting, std::optional<double>(3));
        reader.read_metrics(llama_metrics(10, 5, 0, 0), 61); // restarted
        QVERIFY(has_fault(reader.take_faults(), "counters reset (server restarted?)"));
        reader.fill(sample);
        QVERIFY(!sample.total.prompt_tokens_per_s);
    }

    void llama_malformed_answers_are_faults() {
        LlamaCppReader reader;
        reader.read_slots(kSlotsNew, 0);
        reader.read_slots("[{\"id\":0,", 1);
        reader.read_slots(R"({"error":{"code":501}})", 2);
        reader.read_props("<html>");
        reader.read_metrics("llamacpp:requests_processing 1\nllamacpp:requests_deferred two\n", 3);
        const auto faults = reader.take_faults();
        QCOMPARE(faults.size(), std::size_t{4});
        QVERIFY(has_fault(faults, "/slots: malformed JSON"));
        QVERIFY(has_fault(faults, "/slots: not a JSON array"));
        QVERIFY(has_fault(faults, "/props: malformed JSON"));
        QVERIFY(has_fault(faults, "/metrics line 2 skipped"));
        RemoteSample sample;
        reader.fill(sample);
        QCOMPARE(sample.slot_samples.size(), std::size_t{2}); // the last good /slots
        QCOMPARE(sample.total.running, std::optional<double>(1)); // line 1 was read
    }

    void llama_bytes_per_token_from_the_gguf() {
        KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
        const GgufFile file(path.toStdString());
        const ModelConfig config = read_model_config(file);
        const KvGeometry geometry = config.kv_geometry();
        LlamaCppReader f16("f16");
        f16.read_props(llama_props(path.toStdString()));
        RemoteSample sample;
        f16.fill(sample);
        // f16 rows: the same bytes as kvscope's f16 layout.
        QCOMPARE(sample.total.kv_bytes_per_token,
                 std::optional<std::uint64_t>(KvLayout(geometry, KvDtype::F16, 16).bytes_per_token()));
        LlamaCppReader q8("q8_0");
        q8.read_props(llama_props(path.toStdString()));
        q8.fill(sample);
        const std::uint64_t values = 2ull * config.n_layers * config.n_kv_heads * config.head_dim;
        if (config.n_kv_heads * config.head_dim % 32 == 0)
            QCOMPARE(sample.total.kv_bytes_per_token, std::optional<std::uint64_t>(values / 32 * 34));
        else
            QVERIFY(!sample.total.kv_bytes_per_token); // rows not made of whole q8_0 blocks
        QVERIFY(is_llama_cache_type("iq4_nl"));
        QVERIFY(!is_llama_cache_type("fp8"));
    }

    // A Gemma 3 shape cut to 6 layers (5 with a 64-token window, then a
    // global one, llama.cpp's pattern): llama-server keeps two caches, and
    // the reader finds them in the model file, each layer's bytes alike.
    void llama_window_model_has_two_caches() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        ModelGeometry g = find_model_preset("gemma3-1b");
        g.dim = 256;
        g.n_layers = 6;
        g.n_heads = 1;
        g.n_kv_heads = 1;
        g.ffn_dim = 64;
        g.vocab = 512;
        g.context = 1024;
        g.sliding_window = 64;
        const std::string path = dir.filePath("g3.gguf").toStdString();
        write_synthetic_model(g, GgmlType::F16, 1, path);
        LlamaCppReader reader("f16");
        reader.read_props(llama_props(path));
        RemoteSample sample;
        sample.kind = ServerKind::LlamaCpp;
        reader.fill(sample);
        const std::uint64_t per_layer = 2ull * 256 * 2; // K and V rows of one 256-wide head, f16
        QCOMPARE(sample.total.kv_bytes_per_token, std::optional<std::uint64_t>(6 * per_layer));
        QCOMPARE(sample.llama_kv_caches,
                 (std::vector<LlamaKvCache>{{0, 1, per_layer}, {64, 5, 5 * per_layer}}));
        QVERIFY(has_fault(server_cannot_tell(sample), "sliding-window cache"));

        LlamaCppReader elsewhere("f16"); // the file is not here: nothing is known of the caches
        elsewhere.read_props(llama_props("/nonexistent/model.gguf"));
        RemoteSample none;
        elsewhere.fill(none);
        QVERIFY(none.llama_kv_caches.empty());
    }

    // Bits per value from the one cache-type table, block scales included.
    void cache_type_bits() {
        QCOMPARE(kv_cache_type_bits("f16"), std::optional<double>(16));
        QCOMPARE(kv_cache_type_bits("auto"), std::optional<double>(16));
        QCOMPARE(kv_cache_type_bits("fp8_e5m2"), std::optional<double>(8));
        QCOMPARE(kv_cache_type_bits("q8_0"), std::optional<double>(8.5));
        QCOMPARE(kv_cache_type_bits("q4_0"), std::optional<double>(4.5));
        QCOMPARE(kv_cache_type_bits("iq4_nl"), std::optional<double>(4.5));
        QCOMPARE(kv_cache_type_bits("q5_1"), std::optional<double>(6));
        QVERIFY(!kv_cache_type_bits("nonsense"));
        QCOMPARE(llama_cache_types().front(), std::string_view("f16")); // llama-server's default first
    }

    // vLLM ----------------------------------------------------------------

    void vllm_two_ranks_per_rank_and_summed() {
        VllmReader reader;
        RankState r0{0.5, 3, 1, 2, 1000, 100, 5000, 2000, {0, 0, 0, 0}};
        RankState r1{0.1, 1, 0, 0, 500, 0, 1000, 1000, {0, 0, 0, 0}};
        reader.read_metrics(vllm_metrics(r0, r1), 0);
        r0 = {0.5, 3, 1, 4, 2000, 600, 11000, 5000, {10, 30, 40, 40}};
        r1 = {0.1, 1, 0, 1, 1500, 500, 4000, 2500, {0, 0, 0, 10}};
        reader.read_metrics(vllm_metrics(r0, r1), 60);
        reader.read_models(R"({"object":"list","data":[{"id":"org/model","max_model_len":4096}]})");
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QCOMPARE(sample.model, std::optional<std::string>("org/model"));
        QCOMPARE(sample.ranks.size(), std::size_t{2});
        const ServerFigures& a = sample.ranks[0].figures;
        QCOMPARE(sample.ranks[1].rank, 1);
        QCOMPARE(a.kv_blocks_total, std::optional<std::uint64_t>(1000));
        QCOMPARE(a.kv_blocks_used, std::optional<std::uint64_t>(500));
        QCOMPARE(a.block_size, std::optional<std::uint32_t>(16));
        QCOMPARE(a.kv_dtype, std::optional<std::string>("fp8_e4m3"));
        QCOMPARE(a.kv_tokens_capacity, std::optional<std::uint64_t>(16000));
        QCOMPARE(a.kv_bytes_per_token, std::optional<std::uint64_t>(1048576000 / 16000));
        QVERIFY(!a.kv_tokens_used); // vLLM reports blocks, not tokens
        QCOMPARE(a.preemptions, std::optional<double>(4));
        QVERIFY(near(a.prompt_tokens_per_s, 100.0));
        QVERIFY(near(a.generation_tokens_per_s, 50.0));
        QVERIFY(near(a.prefix_hit_rate, 0.5));
        QVERIFY(near(a.ttft.p50_ms, 300.0, 1e-6));
        QVERIFY(near(sample.ranks[1].figures.ttft.p50_ms, 1000.0, 1e-6)); // all in +Inf
        const ServerFigures& t = sample.total;
        QCOMPARE(t.kv_blocks_total, std::optional<std::uint64_t>(4000));
        QCOMPARE(t.kv_blocks_used, std::optional<std::uint64_t>(800));
        QVERIFY(near(t.kv_usage, 800.0 / 4000)); // weighted by blocks, not (0.5 + 0.1) / 2
        QCOMPARE(t.running, std::optional<double>(4));
        QCOMPARE(t.waiting, std::optional<double>(1));
        QCOMPARE(t.preemptions, std::optional<double>(5));
        QVERIFY(near(t.prompt_tokens_per_s, 150.0));
        QVERIFY(near(t.prefix_hit_rate, 1000.0 / 2000));
        // Merged histogram: 50 observations, 10 / 30 / 40 in the finite buckets.
        QVERIFY(near(t.ttft.p50_ms, 1000.0 * (0.1 + 0.4 * (25.0 - 10) / 20), 1e-6));
        QVERIFY(!t.itl.p50_ms); // no such histogram
    }

    // Requests by how they ended: vLLM's request_success_total by
    // finished_reason, over both ranks (stop and length complete); without
    // an "error" reason its failures are not known, not 0. kvscope's are
    // its engine's own counts.
    void requests_ended_as_each_server_counts_them() {
        VllmReader vllm;
        vllm.read_metrics("vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\"} 70\n"
                          "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} 5\n"
                          "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"m\"} 2\n"
                          "vllm:request_success_total{engine=\"1\",finished_reason=\"stop\",model_name=\"m\"} 15\n"
                          "vllm:request_success_total{engine=\"1\",finished_reason=\"abort\",model_name=\"m\"} 1\n",
                          0);
        RemoteSample sample;
        vllm.fill(sample);
        QVERIFY(vllm.take_faults().empty());
        QCOMPARE(sample.total.requests_completed, std::optional<double>(90));
        QCOMPARE(sample.total.requests_aborted, std::optional<double>(3));
        QVERIFY(!sample.total.requests_failed);

        KvscopeReader kvscope;
        EngineSnapshot s = kvscope_snapshot(100, 50, 0, 0);
        s.completed_requests = 215;
        s.aborted_requests = 4793;
        s.failed_requests = 1;
        kvscope.read_snapshot(json_of(s), 0);
        RemoteSample served;
        kvscope.fill(served);
        QCOMPARE(served.total.requests_completed, std::optional<double>(215));
        QCOMPARE(served.total.requests_aborted, std::optional<double>(4793));
        QCOMPARE(served.total.requests_failed, std::optional<double>(1));
    }

    void vllm_old_names_and_no_engine_label() {
        VllmReader reader;
        const auto text = [](double usage, double queries, double hits) {
            return "vllm:gpu_cache_usage_perc{model_name=\"m\"} " + std::to_string(usage) +
                   "\nvllm:gpu_prefix_cache_queries_total{model_name=\"m\"} " + std::to_string(queries) +
                   "\nvllm:gpu_prefix_cache_hits_total{model_name=\"m\"} " + std::to_string(hits) +
                   "\n# TYPE vllm:time_per_output_token_seconds histogram"
                   "\nvllm:time_per_output_token_seconds_bucket{le=\"0.1\"} " + std::to_string(queries / 10) +
                   "\nvllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} " + std::to_string(queries / 10) +
                   "\nvllm:time_per_output_token_seconds_count " + std::to_string(queries / 10) +
                   "\nvllm:time_per_output_token_seconds_sum 1\n";
        };
        reader.read_metrics(text(0.25, 100, 10), 0);
        reader.read_metrics(text(0.75, 300, 110), 10);
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QCOMPARE(sample.ranks.size(), std::size_t{1});
        QCOMPARE(sample.ranks[0].rank, 0);
        QVERIFY(near(sample.total.kv_usage, 0.75));
        QVERIFY(near(sample.total.prefix_hit_rate, 0.5));
        QVERIFY(near(sample.total.itl.p50_ms, 50.0, 1e-6));
        QCOMPARE(sample.model, std::optional<std::string>("m")); // from model_name
    }

    void vllm_bad_lines_and_restarts_keep_it_going() {
        VllmReader reader;
        RankState r{0.5, 3, 1, 2, 1000, 100, 5000, 2000, {0, 0, 0, 0}};
        reader.read_metrics(vllm_metrics(r, r), 0);
        r.prompt = 6000;
        std::string text = vllm_metrics(r, r);
        text.insert(text.find("# TYPE vllm:num_requests_running"), "vllm:num_requests_waiting{engine=\"0\" 5\n");
        reader.read_metrics(text, 10);
        auto faults = reader.take_faults();
        QCOMPARE(faults.size(), std::size_t{1});
        QVERIFY(has_fault(faults, "vllm /metrics line"));
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(near(sample.ranks[0].figures.prompt_tokens_per_s, 100.0));
        QCOMPARE(sample.ranks[0].figures.waiting, std::optional<double>(1));
        r.prompt = 10; // rank restarted
        reader.read_metrics(vllm_metrics(r, r), 11);
        faults = reader.take_faults();
        QCOMPARE(faults.size(), std::size_t{1}); // one fault for the poll, not one per series
        QVERIFY(has_fault(faults, "counters reset"));
        reader.fill(sample);
        QVERIFY(!sample.ranks[0].figures.prompt_tokens_per_s);
        reader.read_models("not json");
        QVERIFY(has_fault(reader.take_faults(), "vllm /v1/models: malformed JSON"));
    }

    // kvscope-cli serve --metrics-names vllm serves vLLM's names through
    // prometheus-cpp: a second, independent writer of the same series.
    void vllm_reads_kvscopes_vllm_names() {
        serve::MetricsOptions options;
        options.model_name = "stories";
        options.vllm_names = true;
        serve::MetricsRegistry registry(options);
        const EngineSnapshot s = kvscope_snapshot(0, 0, 0, 0);
        registry.on_snapshot(std::make_shared<const EngineSnapshot>(s));
        VllmReader reader;
        reader.read_metrics(registry.serialize(), 0);
        registry.on_snapshot(std::make_shared<const EngineSnapshot>(kvscope_snapshot(120, 60, 40, 10)));
        reader.read_metrics(registry.serialize(), 60);
        RemoteSample sample;
        reader.fill(sample);
        QVERIFY(reader.take_faults().empty());
        QCOMPARE(sample.ranks.size(), std::size_t{1});
        const ServerFigures& f = sample.total;
        QCOMPARE(f.kv_blocks_total, std::optional<std::uint64_t>(8));
        QCOMPARE(f.kv_blocks_used, std::optional<std::uint64_t>(3));
        QCOMPARE(f.block_size, std::optional<std::uint32_t>(kBlockSize));
        QCOMPARE(f.kv_dtype, std::optional<std::string>("f16"));
        QCOMPARE(f.kv_bytes_per_token, std::optional<std::uint64_t>(s.pool->layout.bytes_per_token()));
        QCOMPARE(f.running, std::optional<double>(2));
        QCOMPARE(f.preemptions, std::optional<double>(3));
        QVERIFY(near(f.prompt_tokens_per_s, 2.0));
        QVERIFY(near(f.prefix_hit_rate, 0.25));
        QCOMPARE(sample.model, std::optional<std::string>("stories"));
    }

    void vllm_keeps_what_the_monitor_added_to_a_rank() {
        VllmReader reader;
        RankState r{0.5, 3, 1, 2, 1000, 100, 5000, 2000, {0, 0, 0, 0}};
        reader.read_metrics(vllm_metrics(r, r), 0);
        RemoteSample sample;
        RankSample rank1;
        rank1.rank = 1;
        rank1.kv_events_endpoint = "tcp://127.0.0.1:5558";
        rank1.prefix_cache = PrefixCacheSample{};
        sample.ranks.push_back(rank1);
        reader.fill(sample);
        QCOMPARE(sample.ranks.size(), std::size_t{2});
        QCOMPARE(sample.ranks[1].kv_events_endpoint, std::optional<std::string>("tcp://127.0.0.1:5558"));
        QVERIFY(sample.ranks[1].prefix_cache);
    }
};

QTEST_GUILESS_MAIN(TestServerReaders)
#include "test_server_readers.moc"

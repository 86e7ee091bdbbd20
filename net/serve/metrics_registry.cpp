#include "net/serve/metrics_registry.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace kvscope::serve {

namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

// vLLM's bucket boundaries, as vllm/v1/metrics/loggers.py
// (PrometheusStatLogger, as of vllm-project/vllm 005a810) sets them, so a dashboard's histogram_quantile
// reads the same buckets from either server.
const Histogram::BucketBoundaries kTtftBuckets{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                               0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                               20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
// time_per_output_token_seconds' buckets, which inter_token_latency_seconds
// took over when it replaced that series.
const Histogram::BucketBoundaries kItlBuckets{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                              0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const Histogram::BucketBoundaries kE2eBuckets{0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,  15.0, 20.0,
                                              30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

constexpr std::array kFinishReasons{FinishReason::Stop, FinishReason::Length, FinishReason::Abort,
                                    FinishReason::Error};

// Whether a series is one of vLLM's (also under vllm: with vllm_names) or
// kvscope's own (only under kvscope:).
enum class Exposure { Vllm, KvscopeOnly };

// One series under every prefix it is exposed under: each update goes to
// all of them, so kvscope: and vllm: never disagree.
template <class M>
class Series {
public:
    void add(M& metric) { metrics_.push_back(&metric); }
    // Takes the series out of `families`, the ones it was made in (in order).
    void remove_from(const std::vector<prometheus::Family<M>*>& families) const {
        for (std::size_t i = 0; i < metrics_.size(); ++i)
            families.at(i)->Remove(metrics_[i]);
    }
    template <class F>
    void each(F&& f) const {
        for (M* m : metrics_)
            f(*m);
    }

private:
    std::vector<M*> metrics_;
};

void set(const Series<Gauge>& s, double value) {
    s.each([&](Gauge& g) { g.Set(value); });
}
void increment(const Series<Counter>& s, double by) {
    s.each([&](Counter& c) { c.Increment(by); });
}
void observe(const Series<Histogram>& s, double value) {
    s.each([&](Histogram& h) { h.Observe(value); });
}

// Registers families under the right prefixes, each with the labels every
// series carries.
class SeriesFactory {
public:
    SeriesFactory(prometheus::Registry& registry, const MetricsOptions& options)
        : registry_(registry), labels_{{"model_name", options.model_name}, {"engine", "0"}},
          vllm_names_(options.vllm_names) {}

    template <class M>
    std::vector<prometheus::Family<M>*> families(const std::string& name, const std::string& help,
                                                 Exposure exposure) {
        std::vector<prometheus::Family<M>*> out;
        out.push_back(&builder<M>().Name("kvscope:" + name).Help(help).Labels(labels_).Register(registry_));
        if (exposure == Exposure::Vllm && vllm_names_)
            out.push_back(&builder<M>().Name("vllm:" + name).Help(help).Labels(labels_).Register(registry_));
        return out;
    }

    Series<Gauge> gauge(const std::string& name, const std::string& help, Exposure exposure) {
        return add(families<Gauge>(name, help, exposure), {});
    }
    Series<Counter> counter(const std::string& name, const std::string& help) {
        return add(families<Counter>(name, help, Exposure::Vllm), {});
    }
    Series<Histogram> histogram(const std::string& name, const std::string& help,
                                const Histogram::BucketBoundaries& buckets) {
        return add(families<Histogram>(name, help, Exposure::Vllm), {}, buckets);
    }

    // The series with `labels` (beyond the common ones) in each family.
    template <class M, class... Args>
    static Series<M> add(const std::vector<prometheus::Family<M>*>& families, const prometheus::Labels& labels,
                         const Args&... args) {
        Series<M> series;
        for (prometheus::Family<M>* family : families)
            series.add(family->Add(labels, args...));
        return series;
    }

private:
    template <class M>
    static auto builder() {
        if constexpr (std::is_same_v<M, Gauge>)
            return prometheus::BuildGauge();
        else if constexpr (std::is_same_v<M, Counter>)
            return prometheus::BuildCounter();
        else
            return prometheus::BuildHistogram();
    }

    prometheus::Registry& registry_;
    prometheus::Labels labels_;
    bool vllm_names_;
};

// The snapshot totals the counters follow.
struct Totals {
    std::uint64_t preemptions = 0;
    std::uint64_t prefix_queries = 0;
    std::uint64_t prefix_hits = 0;
    std::uint64_t prompt_tokens = 0;
    std::uint64_t generation_tokens = 0;
};

// A pool-less snapshot knows no prefix-cache figures: they keep `before`'s.
Totals totals_of(const EngineSnapshot& s, const Totals& before) {
    return {s.preemptions, s.pool ? s.pool->prefix_query_tokens : before.prefix_queries,
            s.pool ? s.pool->prefix_hit_tokens : before.prefix_hits, s.prompt_tokens, s.generated_tokens};
}

// A counter moves by what its total grew. A total below the last one
// belongs to a new engine counting from zero: all of it is new.
void grow(const Series<Counter>& counter, std::uint64_t now, std::uint64_t before) {
    const std::uint64_t by = now >= before ? now - before : now;
    if (by > 0)
        increment(counter, static_cast<double>(by));
}

std::size_t index_of(FinishReason reason) { return static_cast<std::size_t>(reason); }

// kv_cache_group_usage_perc's `kind`: vLLM's kv_cache_spec_kind word (the
// one its KV events carry), with a window group's window appended, so that
// one label names a block map lane and sum by (kind) gives each lane.
std::string kind_label(std::uint32_t window) {
    return window == 0 ? "full_attention" : "sliding_window_" + std::to_string(window);
}

// Blocks each group's tables hold (a block is one group's; a shared one
// counts once), indexed by group: their sum is FragmentationStats'
// used_blocks.
std::vector<std::size_t> held_blocks_by_group(const PoolSnapshot& pool) {
    std::vector<std::size_t> held(pool.layout.num_groups(), 0);
    for (const BlockInfo& b : pool.blocks)
        if (b.ref_count > 0 && b.group < held.size())
            ++held[b.group];
    return held;
}

} // namespace

struct MetricsRegistry::Impl {
    explicit Impl(const MetricsOptions& options);

    void set_pool_gauges(const PoolSnapshot& pool);
    void grow_counters(const Totals& now);
    void publish_cache_config(const PoolSnapshot& pool);
    void set_group_gauges(const PoolSnapshot& pool);

    prometheus::Registry registry;
    SeriesFactory factory;
    EngineConfig engine;

    Series<Gauge> running, waiting, usage;
    Series<Gauge> token_usage, internal_waste, free_blocks, cached_blocks, available_tokens, bytes_per_token;
    Series<Counter> preemptions, prefix_queries, prefix_hits, prompt_tokens, generation_tokens;
    std::array<Series<Counter>, kFinishReasons.size()> success; // indexed by FinishReason
    Series<Histogram> ttft, itl, e2e;
    std::vector<prometheus::Family<Gauge>*> cache_config, group_usage_families;

    std::mutex mutex; // guards what follows: on_snapshot's own state
    Totals last;
    bool cache_config_published = false;
    std::vector<std::uint32_t> usage_windows; // each group's window, as group_usage was made for
    std::vector<Series<Gauge>> group_usage;   // indexed by group
};

MetricsRegistry::Impl::Impl(const MetricsOptions& options) : factory(registry, options), engine(options.engine) {
    using enum Exposure;
    // Sequences, as the scheduler counts them: vLLM v1 fans a request with
    // n > 1 out into n requests, so its counts are sequences too.
    running = factory.gauge("num_requests_running", "Sequences in the running batch.", Vllm);
    waiting = factory.gauge("num_requests_waiting",
                            "Sequences waiting to run, swapped-out (preempted) ones included.", Vllm);
    usage = factory.gauge("kv_cache_usage_perc",
                          "KV cache usage, 0..1: blocks held by sequences / all blocks "
                          "(prefix-cached free blocks count as free).",
                          Vllm);
    token_usage = factory.gauge("kv_cache_token_usage_perc",
                                "KV token slots holding a token / all token slots, 0..1.", KvscopeOnly);
    internal_waste = factory.gauge("kv_internal_waste_perc",
                                   "Empty slots of blocks holding tokens / all token slots, 0..1.", KvscopeOnly);
    free_blocks = factory.gauge("kv_free_blocks", "KV blocks no sequence holds, prefix-cached ones included.",
                                KvscopeOnly);
    cached_blocks = factory.gauge("kv_cached_blocks", "Free KV blocks still holding reusable prefix-cached content.",
                                  KvscopeOnly);
    available_tokens = factory.gauge("kv_available_tokens", "Token slots of the free KV blocks.", KvscopeOnly);
    bytes_per_token = factory.gauge("kv_bytes_per_token", "KV cache bytes one token takes, all layers, K and V.",
                                    KvscopeOnly);

    preemptions = factory.counter("num_preemptions_total", "Sequences preempted.");
    prefix_queries = factory.counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.");
    prefix_hits = factory.counter("prefix_cache_hits_total", "Prompt tokens served from the prefix cache.");
    prompt_tokens = factory.counter("prompt_tokens_total", "Prompt tokens computed (prefix-cache hits excluded).");
    generation_tokens = factory.counter("generation_tokens_total", "Tokens generated.");
    const auto outcomes = factory.families<Counter>("request_success_total", "Requests finished, by reason.", Vllm);
    for (FinishReason reason : kFinishReasons)
        success[index_of(reason)] = SeriesFactory::add(outcomes, {{"finished_reason", std::string(to_string(reason))}});

    ttft = factory.histogram("time_to_first_token_seconds", "Time to first token, from submission.", kTtftBuckets);
    itl = factory.histogram("inter_token_latency_seconds", "Time between a sample's consecutive tokens.",
                            kItlBuckets);
    e2e = factory.histogram("e2e_request_latency_seconds", "Request latency, from submission to its end.",
                            kE2eBuckets);
    cache_config = factory.families<Gauge>("cache_config_info", "The KV cache's configuration (value 1).", Vllm);
    group_usage_families = factory.families<Gauge>(
        "kv_cache_group_usage_perc",
        "KV blocks held by one KV cache group's block tables / all blocks, 0..1; the groups sum to "
        "kv_cache_usage_perc.",
        KvscopeOnly);
}

// Every figure from the pool's FragmentationStats (engine/kv/fragmentation.h
// defines them once) and its KvLayout. Block usage minus token usage is the
// slots of held blocks without a token, over all slots: internal waste (the
// unfilled tail of blocks holding a token: each sequence's last block) plus
// reserved waste (held blocks with no token yet: contiguous mode's
// reservation for tokens to come). Paging takes a block with the token that
// needs it, so in paged mode kv_internal_waste_perc is exactly
// kv_cache_usage_perc - kv_cache_token_usage_perc; contiguous mode's
// reservations stay out of it (they are not internal waste).
void MetricsRegistry::Impl::set_pool_gauges(const PoolSnapshot& pool) {
    const FragmentationStats& f = pool.fragmentation;
    set(usage, f.block_occupancy());
    set(token_usage, f.token_occupancy());
    set(internal_waste, f.internal_waste());
    set(free_blocks, static_cast<double>(f.free_blocks));
    set(cached_blocks, static_cast<double>(f.cached_free_blocks));
    set(available_tokens, static_cast<double>(f.free_blocks * f.block_size));
    set(bytes_per_token, static_cast<double>(pool.layout.bytes_per_token()));
}

void MetricsRegistry::Impl::grow_counters(const Totals& now) {
    grow(preemptions, now.preemptions, last.preemptions);
    grow(prefix_queries, now.prefix_queries, last.prefix_queries);
    grow(prefix_hits, now.prefix_hits, last.prefix_hits);
    grow(prompt_tokens, now.prompt_tokens, last.prompt_tokens);
    grow(generation_tokens, now.generation_tokens, last.generation_tokens);
    last = now;
}

// vLLM's label names and value spellings (str() of Python values:
// "True"/"False"), so a dashboard's queries match. num_gpu_blocks is the
// pool's blocks wherever the pool lives (host memory on a CPU backend): the
// name is vLLM's, kept for the dashboards. cache_dtype is kvscope's word
// (f16, fp8-e4m3, int4-kivi, ...), not vLLM's "auto".
void MetricsRegistry::Impl::publish_cache_config(const PoolSnapshot& pool) {
    const KvLayout& layout = pool.layout;
    const auto blocks = static_cast<std::uint32_t>(pool.fragmentation.total_blocks);
    const prometheus::Labels labels{
        {"block_size", std::to_string(layout.block_size())},
        {"cache_dtype", std::string(to_string(layout.dtype()))},
        {"num_gpu_blocks", std::to_string(blocks)},
        {"bytes_per_token", std::to_string(layout.bytes_per_token())},
        {"kv_cache_memory_bytes",
         std::to_string(static_cast<std::uint64_t>(kv_pool_bytes(engine, layout, blocks)))},
        {"enable_prefix_caching", engine.prefix_caching ? "True" : "False"},
    };
    set(SeriesFactory::add(cache_config, labels), 1);
    cache_config_published = true;
}

// One series per KV cache group (engine/kv/kv_groups.h), labelled with its
// index (vLLM's group_idx) and kind; made with the first pool, and again
// should the groups change. A dense model has one: group="0",
// kind="full_attention", equal to kv_cache_usage_perc.
void MetricsRegistry::Impl::set_group_gauges(const PoolSnapshot& pool) {
    const KvGroups& groups = pool.layout.groups();
    std::vector<std::uint32_t> windows;
    for (std::size_t g = 0; g < groups.size(); ++g)
        windows.push_back(groups[g].window);
    if (windows != usage_windows) {
        for (const Series<Gauge>& series : group_usage)
            series.remove_from(group_usage_families);
        group_usage.clear();
        for (std::size_t g = 0; g < windows.size(); ++g)
            group_usage.push_back(SeriesFactory::add(
                group_usage_families, {{"group", std::to_string(g)}, {"kind", kind_label(windows[g])}}));
        usage_windows = std::move(windows);
    }
    const std::vector<std::size_t> held = held_blocks_by_group(pool);
    const double total = static_cast<double>(pool.blocks.size());
    for (std::size_t g = 0; g < held.size(); ++g)
        set(group_usage[g], total > 0 ? static_cast<double>(held[g]) / total : 0.0);
}

MetricsRegistry::MetricsRegistry(const MetricsOptions& options) : impl_(std::make_unique<Impl>(options)) {}

MetricsRegistry::~MetricsRegistry() = default;

void MetricsRegistry::on_first_token(double ttft_s) { observe(impl_->ttft, ttft_s); }

void MetricsRegistry::on_inter_token(double gap_s) { observe(impl_->itl, gap_s); }

void MetricsRegistry::on_request_end(FinishReason reason, double e2e_s) {
    increment(impl_->success.at(index_of(reason)), 1);
    observe(impl_->e2e, e2e_s);
}

void MetricsRegistry::on_snapshot(const std::shared_ptr<const EngineSnapshot>& published) {
    const EngineSnapshot& snapshot = *published;
    set(impl_->running, static_cast<double>(snapshot.running));
    // kvscope swaps a preempted sequence out until it can resume; vLLM v1
    // puts a preempted request back in its waiting queue (and has no
    // swapped series), so swapped sequences count as waiting.
    set(impl_->waiting, static_cast<double>(snapshot.waiting + snapshot.swapped));
    if (snapshot.pool)
        impl_->set_pool_gauges(*snapshot.pool);

    const std::lock_guard lock(impl_->mutex);
    impl_->grow_counters(totals_of(snapshot, impl_->last));
    if (snapshot.pool && !impl_->cache_config_published)
        impl_->publish_cache_config(*snapshot.pool);
    if (snapshot.pool)
        impl_->set_group_gauges(*snapshot.pool);
}

std::string MetricsRegistry::serialize() const {
    return prometheus::TextSerializer().Serialize(impl_->registry.Collect());
}

} // namespace kvscope::serve

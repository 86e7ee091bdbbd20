#include "net/attach/server_readers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "net/attach/metric_window.h"
#include "net/attach/prometheus_text.h"
#include "engine/core/error.h"
#include "engine/model/ggml_type.h"
#include "engine/model/gguf_file.h"
#include "engine/model/model_config.h"
#include "engine/snapshot_json.h"

namespace kvscope::attach {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kCountersReset = "counters reset (server restarted?)";
constexpr std::size_t kMaxPendingFaults = 64; // between two take_faults()

// Faults a reader found since the last take(), oldest first, bounded.
class Faults {
public:
    void add(std::string fault) {
        if (pending_.size() == kMaxPendingFaults)
            pending_.erase(pending_.begin());
        pending_.push_back(std::move(fault));
    }
    std::vector<std::string> take() { return std::exchange(pending_, {}); }

private:
    std::vector<std::string> pending_;
};

// The body as JSON, or nullopt and a fault naming `what` and the problem.
std::optional<Json> parse_json(std::string_view body, std::string_view what, Faults& faults) {
    try {
        return Json::parse(body);
    } catch (const Json::exception& e) {
        faults.add(std::string(what) + ": malformed JSON (" + e.what() + ")");
        return std::nullopt;
    }
}

// The tolerant parse, each skipped line a fault.
PromText read_metrics_text(std::string_view text, std::string_view what, Faults& faults) {
    PromReadResult r = read_prometheus_text(text);
    for (const PromSkippedLine& s : r.skipped)
        faults.add(std::string(what) + " line " + std::to_string(s.line) + " skipped: " + s.reason);
    return std::move(r.text);
}

// /v1/models' first model id (both servers answer the OpenAI shape).
std::optional<std::string> read_model_id(std::string_view body, std::string_view what, Faults& faults) {
    const auto j = parse_json(body, what, faults);
    if (!j)
        return std::nullopt;
    const auto data = j->find("data");
    if (data == j->end() || !data->is_array() || data->empty() || !(*data)[0].contains("id") ||
        !(*data)[0]["id"].is_string()) {
        faults.add(std::string(what) + ": no data[0].id");
        return std::nullopt;
    }
    return (*data)[0]["id"].get<std::string>();
}

// A JSON number as T when it is one (and fits); nullopt otherwise.
template <class T>
std::optional<T> number(const Json& j, std::string_view key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number())
        return std::nullopt;
    const double v = it->get<double>();
    if (v < 0 && std::is_unsigned_v<T>)
        return std::nullopt;
    return static_cast<T>(v);
}

// Sum of the samples named `name` that carry `labels`; nullopt when none.
std::optional<double> sum_of(const PromText& text, std::string_view name, const PromLabels& labels = {}) {
    const auto found = text.find(name, labels);
    if (found.empty())
        return std::nullopt;
    double sum = 0;
    for (const PromSample* s : found)
        sum += s->value;
    return sum;
}

// The first name of `names` with a sample.
std::string_view first_present(const PromText& text, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (text.has(n))
            return n;
    return *names.begin();
}

// A histogram's buckets summed over every series carrying `labels` (so
// several ranks, or several model names, merge as sum by (le) would).
Buckets merged_buckets(const PromText& text, std::string_view histogram, const PromLabels& labels = {}) {
    std::map<double, double> by_le;
    for (const PromSample* s : text.find(std::string(histogram) + "_bucket", labels)) {
        const auto le = s->labels.find("le");
        if (le == s->labels.end())
            continue;
        if (const auto bound = PromText::parse_float(le->second); bound && !std::isnan(*bound))
            by_le[*bound] += s->value;
    }
    return {by_le.begin(), by_le.end()};
}

// Feeds a series' value to its window; 1 on a reset, else 0. An int, not
// a bool: callers '|' several feeds, and every one of them must run.
int feed(CounterWindow& w, std::optional<double> value, double t) {
    return value && w.add(t, *value) == WindowAdd::Reset ? 1 : 0;
}
int feed(HistogramWindow& w, Buckets buckets, double t) {
    return !buckets.empty() && w.add(t, std::move(buckets)) == WindowAdd::Reset ? 1 : 0;
}

// Hits over queries between the windows' ends; nullopt without queries.
std::optional<double> hit_rate(const CounterWindow& hits, const CounterWindow& queries) {
    const auto h = hits.delta();
    const auto q = queries.delta();
    if (!h || !q || *q <= 0)
        return std::nullopt;
    return std::clamp(*h / *q, 0.0, 1.0);
}

} // namespace

// ---------------------------------------------------------------------------
// kvscope-cli serve

struct KvscopeReader::Impl {
    Faults faults;
    std::shared_ptr<const EngineSnapshot> engine;
    std::optional<std::string> model;
    CounterWindow prompt_tokens, generated_tokens; // from the snapshots
    CounterWindow prefix_hits, prefix_queries;     // from /metrics
    HistogramWindow ttft, itl;
    bool have_metrics = false;
};

KvscopeReader::KvscopeReader() : impl_(std::make_unique<Impl>()) {}
KvscopeReader::~KvscopeReader() = default;

void KvscopeReader::read_snapshot(std::string_view json, double t) {
    const auto j = parse_json(json, "kvscope snapshot", impl_->faults);
    if (!j)
        return;
    try {
        impl_->engine = std::make_shared<const EngineSnapshot>(engine_snapshot_from_json(*j));
    } catch (const Error& e) {
        impl_->faults.add(std::string("kvscope snapshot: ") + e.what());
        return;
    }
    const int reset = feed(impl_->prompt_tokens, double(impl_->engine->prompt_tokens), t) |
                       feed(impl_->generated_tokens, double(impl_->engine->generated_tokens), t);
    if (reset)
        impl_->faults.add(std::string(kCountersReset));
}

void KvscopeReader::read_metrics(std::string_view text, double t) {
    const PromText m = read_metrics_text(text, "kvscope /metrics", impl_->faults);
    Impl& i = *impl_;
    // Names as net/serve/metrics_registry.cpp registers them.
    const int reset = feed(i.prefix_hits, sum_of(m, "kvscope:prefix_cache_hits_total"), t) |
                       feed(i.prefix_queries, sum_of(m, "kvscope:prefix_cache_queries_total"), t) |
                       feed(i.ttft, merged_buckets(m, "kvscope:time_to_first_token_seconds"), t) |
                       feed(i.itl, merged_buckets(m, "kvscope:inter_token_latency_seconds"), t);
    if (reset)
        i.faults.add(std::string(kCountersReset));
}

void KvscopeReader::read_models(std::string_view json) {
    if (auto id = read_model_id(json, "kvscope /v1/models", impl_->faults))
        impl_->model = std::move(id);
}

void KvscopeReader::fill(RemoteSample& sample) const {
    const Impl& i = *impl_;
    sample.model = i.model;
    sample.engine = i.engine;
    ServerFigures& f = sample.total;
    if (i.engine) {
        const EngineSnapshot& s = *i.engine;
        if (s.pool) {
            const FragmentationStats& frag = s.pool->fragmentation;
            const KvLayout& layout = s.pool->layout;
            f.kv_blocks_total = frag.total_blocks;
            f.kv_blocks_used = frag.used_blocks;
            f.kv_tokens_capacity = frag.total_slots();
            f.kv_tokens_used = frag.token_slots;
            f.kv_usage = frag.block_occupancy();
            f.block_size = layout.block_size();
            f.kv_dtype = std::string(to_string(layout.dtype()));
            f.kv_bytes_per_token = layout.bytes_per_token();
        }
        f.running = double(s.running);
        // As the server's /metrics counts them: a swapped (preempted)
        // sequence waits to resume, as vLLM's preempted requests wait.
        f.waiting = double(s.waiting + s.swapped);
        f.preemptions = double(s.preemptions);
        f.requests_completed = double(s.completed_requests);
        f.requests_aborted = double(s.aborted_requests);
        f.requests_failed = double(s.failed_requests);
    }
    f.prompt_tokens_per_s = i.prompt_tokens.rate();
    f.generation_tokens_per_s = i.generated_tokens.rate();
    f.prefix_hit_rate = hit_rate(i.prefix_hits, i.prefix_queries);
    f.ttft = i.ttft.quantiles_ms();
    f.itl = i.itl.quantiles_ms();
}

std::vector<std::string> KvscopeReader::take_faults() { return impl_->faults.take(); }

// ---------------------------------------------------------------------------
// llama.cpp

namespace {

// K and V bytes of one token, all layers, as llama.cpp's KV cache stores
// them: per layer one K row of n_kv_heads * key_length values and one V
// row of n_kv_heads * value_length, in `type`. Read from the GGUF's
// {arch}.* metadata so any architecture the server runs works; nullopt
// when the file is unreadable or lacks the keys (per-layer head counts,
// as some models have, included). Sliding-window layers are counted as
// full ones: the figure is the cost of a token in a full-attention cache.
std::optional<std::uint64_t> gguf_kv_bytes_per_token(const std::string& path, GgmlType type) {
    try {
        const GgufFile file(path);
        const auto arch = file.get_string("general.architecture");
        if (!arch)
            return std::nullopt;
        const auto key = [&](std::string_view k) { return file.get_uint(*arch + "." + std::string(k)); };
        const auto layers = key("block_count");
        const auto heads = key("attention.head_count");
        const auto embd = key("embedding_length");
        const auto kv_heads = key("attention.head_count_kv").value_or(heads.value_or(0));
        const std::uint64_t default_len = heads && *heads && embd ? *embd / *heads : 0;
        const std::uint64_t k_len = key("attention.key_length").value_or(default_len);
        const std::uint64_t v_len = key("attention.value_length").value_or(k_len);
        if (!layers || kv_heads == 0 || k_len == 0 || v_len == 0)
            return std::nullopt;
        return *layers * (row_bytes(type, kv_heads * k_len) + row_bytes(type, kv_heads * v_len));
    } catch (const Error&) {
        return std::nullopt; // not a GGUF, a row not made of whole blocks, ...
    }
}

// A model with window layers as llama-server caches it: the full-attention
// layers in one cache, the window layers in another (one window per model:
// llama.cpp's n_swa), each layer costing the file's bytes per token / its
// layers. Empty for a model without windows, or of an architecture kvscope
// does not read (its window layers are not known: llama.cpp sets the
// pattern per architecture in src/llama-model.cpp).
std::vector<LlamaKvCache> gguf_kv_caches(const std::string& path, std::optional<std::uint64_t> bytes_per_token) {
    try {
        const ModelConfig c = read_model_config(GgufFile(path));
        if (!c.has_windows())
            return {};
        LlamaKvCache full{0, 0, std::nullopt}, window{0, 0, std::nullopt};
        for (const std::uint32_t w : c.layer_windows()) {
            LlamaKvCache& cache = w == 0 ? full : window;
            ++cache.n_layers;
            cache.window = w;
        }
        for (LlamaKvCache* cache : {&full, &window})
            if (bytes_per_token && c.n_layers > 0)
                cache->bytes_per_token = *bytes_per_token / c.n_layers * cache->n_layers;
        return {full, window};
    } catch (const Error&) {
        return {};
    }
}

// The tokens a slot's KV holds. Newer servers (ggml-org/llama.cpp
// tools/server/server-context.cpp, server_slot::to_json) send
// n_prompt_tokens = prompt.tokens.size(), the slot's cached tokens, which
// handle_last_sampled_token extends with every sampled token, beside
// n_prompt_tokens_cache/_processed (this task's reused and computed prompt
// tokens); older ones sent the task's prompt size and n_decoded apart. The
// larger of n_prompt_tokens and cache + processed + decoded is right for
// both (at most the one sampled, not yet decoded token over). Forks that
// send only n_past: n_past.
std::uint32_t slot_tokens(const Json& slot, std::optional<std::uint32_t> decoded) {
    const auto prompt = number<std::uint32_t>(slot, "n_prompt_tokens");
    if (!prompt)
        return number<std::uint32_t>(slot, "n_past").value_or(0);
    const auto cached = number<std::uint32_t>(slot, "n_prompt_tokens_cache");
    const auto processed = number<std::uint32_t>(slot, "n_prompt_tokens_processed");
    if (cached && processed)
        return std::max(*prompt, *cached + *processed + decoded.value_or(0));
    return *prompt + decoded.value_or(0);
}

// next_token is an object in the README and a one-element array in the
// code (nlohmann's double braces): both.
std::optional<std::uint32_t> decoded_of(const Json& slot) {
    const auto it = slot.find("next_token");
    if (it == slot.end())
        return std::nullopt;
    const Json* next = &*it;
    if (next->is_array()) {
        if (next->empty())
            return std::nullopt;
        next = &(*next)[0];
    }
    return next->is_object() ? number<std::uint32_t>(*next, "n_decoded") : std::nullopt;
}

SlotSample slot_of(const Json& j) {
    SlotSample s;
    s.id = number<int>(j, "id").value_or(0);
    s.n_ctx = number<std::uint32_t>(j, "n_ctx").value_or(0);
    s.busy = j.contains("is_processing") && j["is_processing"].is_boolean() && j["is_processing"].get<bool>();
    s.prompt_tokens = number<std::uint32_t>(j, "n_prompt_tokens");
    s.decoded = decoded_of(j);
    s.tokens = slot_tokens(j, s.decoded);
    return s;
}

} // namespace

struct LlamaCppReader::Impl {
    std::string kv_dtype;
    std::optional<bool> kv_unified; // the user's answer; nullopt: guess (capacity())
    Faults faults;
    std::optional<std::string> model;
    std::optional<std::string> model_path;
    std::optional<std::uint32_t> n_ctx_train;       // /v1/models meta, or the GGUF
    std::optional<std::uint64_t> bytes_per_token;
    std::vector<LlamaKvCache> kv_caches;
    std::vector<SlotSample> slots;
    std::optional<double> processing, deferred;      // /metrics
    CounterWindow prompt_tokens, predicted_tokens;

    void read_model_file(const std::string& path);
    std::optional<std::uint64_t> capacity() const;
};

void LlamaCppReader::Impl::read_model_file(const std::string& path) {
    model_path = path;
    bytes_per_token.reset();
    kv_caches.clear();
    std::error_code ec;
    if (path.empty() || !std::filesystem::is_regular_file(path, ec))
        return; // the server runs elsewhere: bytes stay unknown
    if (const auto type = llamacpp_cache_type(kv_dtype))
        bytes_per_token = gguf_kv_bytes_per_token(path, *type);
    kv_caches = gguf_kv_caches(path, bytes_per_token);
}

// The server does not report whether its KV is unified. From its source
// (ggml-org/llama.cpp): each slot's n_ctx is n_ctx_slot() =
// min(llama_n_ctx_seq(ctx), --kv-unified-per-slot, n_ctx_train)
// (tools/server/server-context.cpp), and llama_n_ctx_seq is the whole
// n_ctx with kv_unified, n_ctx / n_seq_max (padded to 256) without
// (src/llama-context.cpp). So split slots own n_ctx each (capacity: their
// sum), while unified slots each report the one shared buffer (capacity:
// one slot's n_ctx), unless --kv-unified-per-slot caps them, which makes
// the sum right again. Deciding, in order:
//  - one slot: both read the same;
//  - slots holding more tokens together than one slot's n_ctx: split
//    (a shared buffer cannot hold that);
//  - what the user said (--kv-unified yes|no), when they said it;
//  - four slots: unified (llama-server's default, -np auto = 4 slots +
//    -kvu; -kvu is on by default with -np auto only);
//  - otherwise split. The guess misreads a server started with -np 4
//    (split) or with -kvu and another -np, until its slots prove it
//    split: the user's answer is the way out (server_cannot_tell says so).
std::optional<std::uint64_t> LlamaCppReader::Impl::capacity() const {
    if (slots.empty())
        return std::nullopt;
    std::uint64_t sum_ctx = 0, held = 0;
    std::uint32_t min_ctx = slots.front().n_ctx;
    for (const SlotSample& s : slots) {
        sum_ctx += s.n_ctx;
        held += s.tokens;
        min_ctx = std::min(min_ctx, s.n_ctx);
    }
    if (slots.size() == 1 || held > min_ctx)
        return sum_ctx;
    constexpr std::size_t kAutoSlots = 4; // -np auto
    if (kv_unified.value_or(slots.size() == kAutoSlots))
        return std::ranges::max(slots, {}, &SlotSample::n_ctx).n_ctx;
    return sum_ctx;
}

LlamaCppReader::LlamaCppReader(std::string kv_dtype, std::optional<bool> kv_unified)
    : impl_(std::make_unique<Impl>()) {
    impl_->kv_dtype = std::move(kv_dtype);
    impl_->kv_unified = kv_unified;
}
LlamaCppReader::~LlamaCppReader() = default;

void LlamaCppReader::read_props(std::string_view json) {
    const auto j = parse_json(json, "llama.cpp /props", impl_->faults);
    if (!j)
        return;
    if (!j->is_object()) {
        impl_->faults.add("llama.cpp /props: not a JSON object");
        return;
    }
    const auto path = j->find("model_path");
    if (path != j->end() && path->is_string() && path->get<std::string>() != impl_->model_path)
        impl_->read_model_file(path->get<std::string>());
    if (!impl_->model) {
        const auto alias = j->find("model_alias");
        if (alias != j->end() && alias->is_string() && !alias->get<std::string>().empty())
            impl_->model = alias->get<std::string>();
    }
}

void LlamaCppReader::read_slots(std::string_view json, double /*t*/) {
    const auto j = parse_json(json, "llama.cpp /slots", impl_->faults);
    if (!j)
        return;
    if (!j->is_array()) {
        impl_->faults.add("llama.cpp /slots: not a JSON array");
        return;
    }
    std::vector<SlotSample> slots;
    for (std::size_t k = 0; k < j->size(); ++k) {
        if (!(*j)[k].is_object() || !number<std::uint32_t>((*j)[k], "n_ctx")) {
            impl_->faults.add("llama.cpp /slots: element " + std::to_string(k) + " has no n_ctx");
            return;
        }
        slots.push_back(slot_of((*j)[k]));
    }
    std::ranges::sort(slots, {}, &SlotSample::id);
    impl_->slots = std::move(slots);
}

void LlamaCppReader::read_metrics(std::string_view text, double t) {
    const PromText m = read_metrics_text(text, "llama.cpp /metrics", impl_->faults);
    Impl& i = *impl_;
    i.processing = sum_of(m, "llamacpp:requests_processing");
    i.deferred = sum_of(m, "llamacpp:requests_deferred");
    const int reset = feed(i.prompt_tokens, sum_of(m, "llamacpp:prompt_tokens_total"), t) |
                       feed(i.predicted_tokens, sum_of(m, "llamacpp:tokens_predicted_total"), t);
    if (reset)
        i.faults.add(std::string(kCountersReset));
}

void LlamaCppReader::read_models(std::string_view json) {
    const auto j = parse_json(json, "llama.cpp /v1/models", impl_->faults);
    if (!j)
        return;
    if (auto id = read_model_id(json, "llama.cpp /v1/models", impl_->faults))
        impl_->model = std::move(id);
    const auto data = j->find("data");
    if (data != j->end() && data->is_array() && !data->empty() && (*data)[0].contains("meta") &&
        (*data)[0]["meta"].is_object())
        if (const auto train = number<std::uint32_t>((*data)[0]["meta"], "n_ctx_train"))
            impl_->n_ctx_train = *train;
}

void LlamaCppReader::fill(RemoteSample& sample) const {
    const Impl& i = *impl_;
    sample.model = i.model;
    sample.slot_samples = i.slots;
    sample.llama_kv_caches = i.kv_caches;
    ServerFigures& f = sample.total;
    f.kv_dtype = i.kv_dtype;
    f.kv_bytes_per_token = i.bytes_per_token;
    if (!i.slots.empty()) {
        std::uint64_t used = 0;
        for (const SlotSample& s : i.slots)
            used += s.tokens;
        f.kv_tokens_used = used;
        f.kv_tokens_capacity = i.capacity();
        if (f.kv_tokens_capacity && *f.kv_tokens_capacity > 0)
            f.kv_usage = std::min(1.0, double(used) / double(*f.kv_tokens_capacity));
    }
    // Without --metrics the busy slots are the requests processing.
    f.running = i.processing ? i.processing
                             : i.slots.empty() ? std::nullopt
                                               : std::optional(double(std::ranges::count_if(
                                                     i.slots, [](const SlotSample& s) { return s.busy; })));
    f.waiting = i.deferred;
    f.prompt_tokens_per_s = i.prompt_tokens.rate();
    f.generation_tokens_per_s = i.predicted_tokens.rate();
}

std::vector<std::string> LlamaCppReader::take_faults() { return impl_->faults.take(); }

// ---------------------------------------------------------------------------
// vLLM

namespace {

// One rank's windows and last gauges.
struct VllmRank {
    std::optional<double> usage, running, waiting, preemptions;
    std::optional<std::uint32_t> block_size;
    std::optional<std::uint64_t> blocks, capacity_tokens, memory_bytes;
    std::optional<std::string> cache_dtype;
    CounterWindow prefix_hits, prefix_queries, prompt_tokens, generation_tokens;
    HistogramWindow ttft, itl;
};

std::optional<std::uint64_t> label_uint(const PromLabels& labels, const std::string& key) {
    const auto it = labels.find(key);
    if (it == labels.end())
        return std::nullopt;
    const auto v = PromText::parse_float(it->second);
    return v && *v >= 0 ? std::optional(static_cast<std::uint64_t>(*v)) : std::nullopt;
}

// The `engine` label's rank; a series without it is rank 0.
std::optional<int> rank_of(const PromLabels& labels) {
    const auto it = labels.find("engine");
    if (it == labels.end())
        return 0;
    const auto v = PromText::parse_float(it->second);
    if (!v || *v < 0 || *v != std::floor(*v))
        return std::nullopt;
    return static_cast<int>(*v);
}

void read_cache_config(const PromLabels& labels, VllmRank& r) {
    r.block_size = label_uint(labels, "block_size");
    r.blocks = label_uint(labels, "num_gpu_blocks");
    r.memory_bytes = label_uint(labels, "kv_cache_memory_bytes");
    // PR #42206's group-aware capacity, better than blocks * block_size for
    // hybrid models.
    r.capacity_tokens = label_uint(labels, "kv_cache_size_tokens");
    if (const auto it = labels.find("cache_dtype"); it != labels.end())
        r.cache_dtype = it->second;
}

ServerFigures figures_of(const VllmRank& r) {
    ServerFigures f;
    f.kv_usage = r.usage;
    f.kv_blocks_total = r.blocks;
    if (r.usage && r.blocks)
        f.kv_blocks_used = static_cast<std::uint64_t>(std::llround(*r.usage * double(*r.blocks)));
    f.block_size = r.block_size;
    f.kv_dtype = r.cache_dtype;
    f.kv_tokens_capacity = r.capacity_tokens;
    if (!f.kv_tokens_capacity && r.blocks && r.block_size)
        f.kv_tokens_capacity = *r.blocks * *r.block_size;
    if (r.memory_bytes && r.blocks && r.block_size && *r.blocks * *r.block_size > 0)
        f.kv_bytes_per_token = *r.memory_bytes / (*r.blocks * *r.block_size);
    f.running = r.running;
    f.waiting = r.waiting;
    f.preemptions = r.preemptions;
    f.prompt_tokens_per_s = r.prompt_tokens.rate();
    f.generation_tokens_per_s = r.generation_tokens.rate();
    f.prefix_hit_rate = hit_rate(r.prefix_hits, r.prefix_queries);
    f.ttft = r.ttft.quantiles_ms();
    f.itl = r.itl.quantiles_ms();
    return f;
}

template <class T>
std::optional<T> add(std::optional<T> a, std::optional<T> b) {
    if (!a)
        return b;
    return b ? std::optional(*a + *b) : a;
}

} // namespace

struct VllmReader::Impl {
    Faults faults;
    std::optional<std::string> model;
    std::map<int, VllmRank> ranks;
    CounterWindow prefix_hits, prefix_queries; // summed over ranks
    HistogramWindow ttft, itl;                 // merged over ranks
    std::optional<double> completed, aborted, failed; // request_success_total, summed over ranks

    // Names: the current ones first, then those they replaced
    // (REMOTE-PROTOCOLS.md section 2).
    struct Names {
        std::string_view usage, hits, queries, itl; // itl: the histogram, without _bucket
    };
    static Names names_in(const PromText& m) {
        return {first_present(m, {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}),
                first_present(m, {"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}),
                first_present(m, {"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}),
                m.has("vllm:inter_token_latency_seconds_bucket") || !m.has("vllm:time_per_output_token_seconds_bucket")
                    ? "vllm:inter_token_latency_seconds"
                    : "vllm:time_per_output_token_seconds"};
    }
    // The ranks the text names, by any series' engine label.
    std::vector<int> ranks_in(const PromText& m);
    int read_rank(const PromText& m, const Names& n, int rank, double t); // 1: its counters reset
};

std::vector<int> VllmReader::Impl::ranks_in(const PromText& m) {
    std::vector<int> found;
    for (const PromSample& s : m.samples) {
        if (!s.name.starts_with("vllm:"))
            continue;
        if (const auto r = rank_of(s.labels); r && std::ranges::find(found, *r) == found.end())
            found.push_back(*r);
    }
    std::ranges::sort(found);
    return found;
}

// Reads one rank's series; true when one of its counters reset.
int VllmReader::Impl::read_rank(const PromText& m, const Names& n, int rank, double t) {
    VllmRank& r = ranks[rank];
    // Series of this rank: engine="N", or (rank 0) no engine label at all.
    const auto of_rank = [&](std::string_view name) {
        std::optional<double> sum;
        for (const PromSample* s : m.find(name))
            if (rank_of(s->labels) == rank)
                sum = sum.value_or(0) + s->value;
        return sum;
    };
    const auto buckets_of_rank = [&](std::string_view histogram) {
        std::map<double, double> by_le;
        for (const PromSample* s : m.find(std::string(histogram) + "_bucket"))
            if (rank_of(s->labels) == rank && s->labels.contains("le"))
                if (const auto le = PromText::parse_float(s->labels.at("le")); le && !std::isnan(*le))
                    by_le[*le] += s->value;
        return Buckets(by_le.begin(), by_le.end());
    };
    r.usage = of_rank(n.usage);
    r.running = of_rank("vllm:num_requests_running");
    r.waiting = of_rank("vllm:num_requests_waiting");
    r.preemptions = of_rank("vllm:num_preemptions_total");
    for (const PromSample* s : m.find("vllm:cache_config_info"))
        if (rank_of(s->labels) == rank)
            read_cache_config(s->labels, r);
    return feed(r.prefix_hits, of_rank(n.hits), t) | feed(r.prefix_queries, of_rank(n.queries), t) |
           feed(r.prompt_tokens, of_rank("vllm:prompt_tokens_total"), t) |
           feed(r.generation_tokens, of_rank("vllm:generation_tokens_total"), t) |
           feed(r.ttft, buckets_of_rank("vllm:time_to_first_token_seconds"), t) |
           feed(r.itl, buckets_of_rank(n.itl), t);
}

VllmReader::VllmReader() : impl_(std::make_unique<Impl>()) {}
VllmReader::~VllmReader() = default;

void VllmReader::read_metrics(std::string_view text, double t) {
    const PromText m = read_metrics_text(text, "vllm /metrics", impl_->faults);
    Impl& i = *impl_;
    const Impl::Names n = Impl::names_in(m);
    int reset = 0;
    for (int rank : i.ranks_in(m))
        reset |= i.read_rank(m, n, rank, t);
    reset |= feed(i.prefix_hits, sum_of(m, n.hits), t) | feed(i.prefix_queries, sum_of(m, n.queries), t) |
             feed(i.ttft, merged_buckets(m, "vllm:time_to_first_token_seconds"), t) |
             feed(i.itl, merged_buckets(m, n.itl), t);
    if (reset)
        i.faults.add(std::string(kCountersReset));
    // Requests by how they ended; vLLM's finished reasons are stop, length
    // and abort, "error" only in the versions that have it.
    const auto ended = [&m](const char* reason) {
        return sum_of(m, "vllm:request_success_total", {{"finished_reason", reason}});
    };
    i.completed = add(ended("stop"), ended("length"));
    i.aborted = ended("abort");
    i.failed = ended("error");
    if (!i.model)
        for (const PromSample& s : m.samples)
            if (const auto it = s.labels.find("model_name"); it != s.labels.end()) {
                i.model = it->second;
                break;
            }
}

void VllmReader::read_models(std::string_view json) {
    if (auto id = read_model_id(json, "vllm /v1/models", impl_->faults))
        impl_->model = std::move(id);
}

void VllmReader::fill(RemoteSample& sample) const {
    const Impl& i = *impl_;
    sample.model = i.model;
    ServerFigures total;
    bool every_rank_has_blocks = !i.ranks.empty();
    std::vector<RankSample> ranks;
    for (const auto& [rank, r] : i.ranks) {
        RankSample rs;
        // Keep what the monitor added to a rank it already shows.
        if (const auto old = std::ranges::find(sample.ranks, rank, &RankSample::rank); old != sample.ranks.end())
            rs = *old;
        rs.rank = rank;
        rs.figures = figures_of(r);
        const ServerFigures& f = rs.figures;
        total.kv_blocks_total = add(total.kv_blocks_total, f.kv_blocks_total);
        total.kv_blocks_used = add(total.kv_blocks_used, f.kv_blocks_used);
        total.kv_tokens_capacity = add(total.kv_tokens_capacity, f.kv_tokens_capacity);
        total.running = add(total.running, f.running);
        total.waiting = add(total.waiting, f.waiting);
        total.preemptions = add(total.preemptions, f.preemptions);
        total.prompt_tokens_per_s = add(total.prompt_tokens_per_s, f.prompt_tokens_per_s);
        total.generation_tokens_per_s = add(total.generation_tokens_per_s, f.generation_tokens_per_s);
        every_rank_has_blocks = every_rank_has_blocks && f.kv_blocks_total && f.kv_usage;
        ranks.push_back(std::move(rs));
    }
    if (!ranks.empty()) {
        const ServerFigures& first = ranks.front().figures;
        total.block_size = first.block_size;
        total.kv_dtype = first.kv_dtype;
        total.kv_bytes_per_token = first.kv_bytes_per_token;
    }
    // Usage weighted by blocks: used blocks over all blocks. A rank without
    // its block count leaves the total's usage unknown rather than guessed.
    if (every_rank_has_blocks && total.kv_blocks_total && *total.kv_blocks_total > 0) {
        double used = 0;
        for (const RankSample& rs : ranks)
            used += *rs.figures.kv_usage * double(*rs.figures.kv_blocks_total);
        total.kv_usage = used / double(*total.kv_blocks_total);
    } else if (ranks.size() == 1) {
        total.kv_usage = ranks.front().figures.kv_usage;
    }
    total.prefix_hit_rate = hit_rate(i.prefix_hits, i.prefix_queries);
    total.ttft = i.ttft.quantiles_ms();
    total.itl = i.itl.quantiles_ms();
    total.requests_completed = i.completed;
    total.requests_aborted = i.aborted;
    total.requests_failed = i.failed;
    sample.total = std::move(total);
    sample.ranks = std::move(ranks);
}

std::vector<std::string> VllmReader::take_faults() { return impl_->faults.take(); }

} // namespace kvscope::attach

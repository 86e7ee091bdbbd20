#include "fake_vllm_server.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <spdlog/fmt/fmt.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace kvscope::test {
namespace {

// When prometheus_client says each series was created (the _created samples a reader must ignore).
constexpr double kCreated = 1.7e9;

std::string labels(const std::string& model, std::size_t engine) {
    return fmt::format(R"(model_name="{}",engine="{}")", model, engine);
}

void gauge(std::string& out, const char* name, const std::string& model, const std::vector<FakeVllmRank>& ranks,
           double FakeVllmRank::*field) {
    out += fmt::format("# HELP {0} {0}\n# TYPE {0} gauge\n", name);
    for (std::size_t i = 0; i < ranks.size(); ++i)
        out += fmt::format("{}{{{}}} {}\n", name, labels(model, i), ranks[i].*field);
}

// prometheus_client's text for a Counter: NAME_total, and NAME_created as a gauge of its own.
void counter(std::string& out, const char* name, const std::string& model, const std::vector<FakeVllmRank>& ranks,
             double FakeVllmRank::*field) {
    out += fmt::format("# HELP {0}_total {0}\n# TYPE {0}_total counter\n", name);
    for (std::size_t i = 0; i < ranks.size(); ++i)
        out += fmt::format("{}_total{{{}}} {}\n", name, labels(model, i), ranks[i].*field);
    out += fmt::format("# HELP {0}_created {0}\n# TYPE {0}_created gauge\n", name);
    for (std::size_t i = 0; i < ranks.size(); ++i)
        out += fmt::format("{}_created{{{}}} {}\n", name, labels(model, i), kCreated);
}

void histogram(std::string& out, const char* name, const std::string& model, const std::vector<FakeVllmRank>& ranks,
               FakeHistogram FakeVllmRank::*field) {
    out += fmt::format("# HELP {0} {0}\n# TYPE {0} histogram\n", name);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        const FakeHistogram& h = ranks[i].*field;
        std::uint64_t below = 0;
        for (std::size_t b = 0; b < FakeHistogram::kBuckets.size(); ++b) {
            below += h.counts[b];
            out += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels(model, i), FakeHistogram::kBuckets[b],
                               below);
        }
        below += h.counts.back();
        out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", name, labels(model, i), below);
        out += fmt::format("{}_count{{{}}} {}\n", name, labels(model, i), below);
        out += fmt::format("{}_sum{{{}}} {}\n", name, labels(model, i), h.sum);
    }
}

void cache_config_info(std::string& out, const std::vector<FakeVllmRank>& ranks) {
    out += "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
           "# TYPE vllm:cache_config_info gauge\n";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        const FakeVllmRank& r = ranks[i];
        const std::string memory =
            r.kv_cache_memory_bytes ? fmt::format(R"(kv_cache_memory_bytes="{}",)", *r.kv_cache_memory_bytes) : "";
        out += fmt::format(R"(vllm:cache_config_info{{block_size="{}",cache_dtype="{}",calculate_kv_scales="False",)"
                           R"(enable_prefix_caching="True",engine="{}",gpu_memory_utilization="0.9",)"
                           R"(is_attention_free="False",{}num_cpu_blocks="None",num_gpu_blocks="{}",)"
                           R"(num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",)"
                           R"(sliding_window="None",swap_space="4"}} 1.0)"
                           "\n",
                           r.block_size, r.cache_dtype, i, memory, r.num_gpu_blocks);
    }
}

} // namespace

void FakeHistogram::observe(double seconds) {
    std::size_t b = 0;
    while (b < kBuckets.size() && seconds > kBuckets[b])
        ++b;
    ++counts[b];
    sum += seconds;
}

std::string vllm_metrics_text(const std::string& model, const std::vector<FakeVllmRank>& ranks) {
    std::string out;
    gauge(out, "vllm:num_requests_running", model, ranks, &FakeVllmRank::running);
    gauge(out, "vllm:num_requests_waiting", model, ranks, &FakeVllmRank::waiting);
    gauge(out, "vllm:kv_cache_usage_perc", model, ranks, &FakeVllmRank::kv_usage);
    counter(out, "vllm:prefix_cache_queries", model, ranks, &FakeVllmRank::prefix_queries);
    counter(out, "vllm:prefix_cache_hits", model, ranks, &FakeVllmRank::prefix_hits);
    counter(out, "vllm:num_preemptions", model, ranks, &FakeVllmRank::preemptions);
    counter(out, "vllm:prompt_tokens", model, ranks, &FakeVllmRank::prompt_tokens);
    counter(out, "vllm:generation_tokens", model, ranks, &FakeVllmRank::generation_tokens);
    histogram(out, "vllm:time_to_first_token_seconds", model, ranks, &FakeVllmRank::ttft);
    histogram(out, "vllm:inter_token_latency_seconds", model, ranks, &FakeVllmRank::itl);
    cache_config_info(out, ranks);
    return out;
}

struct FakeVllmServer::Impl {
    std::string model;
    std::uint32_t max_model_len;
    httplib::Server http;
    std::thread listener;
    int port = 0;

    mutable std::mutex mutex;
    std::condition_variable stopped_cv; // stop() and set_delay()
    bool stopped = false;
    std::string metrics;
    std::chrono::milliseconds delay{0};
    std::map<std::string, int> served;
    std::map<std::string, int> requested;

    // Waits the delay (as set_delay() last set it), unless stop() comes
    // first; false when it did.
    bool wait_delay() {
        const auto start = std::chrono::steady_clock::now();
        std::unique_lock lock(mutex);
        while (!stopped && std::chrono::steady_clock::now() < start + delay)
            stopped_cv.wait_until(lock, start + delay);
        return !stopped;
    }

    void count(const std::string& path) {
        std::lock_guard lock(mutex);
        ++served[path];
    }

    void arrived(const std::string& path) {
        std::lock_guard lock(mutex);
        ++requested[path];
    }

    void routes() {
        http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
            arrived(req.path);
            if (!wait_delay())
                return;
            const nlohmann::json model_card{{"id", model},           {"object", "model"}, {"created", 1700000000},
                                            {"owned_by", "vllm"},    {"root", model},     {"parent", nullptr},
                                            {"max_model_len", max_model_len}, {"permission", nlohmann::json::array()}};
            res.set_content(nlohmann::json({{"object", "list"}, {"data", {model_card}}}).dump(), "application/json");
            count(req.path);
        });
        http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
            arrived(req.path);
            if (!wait_delay())
                return;
            std::lock_guard lock(mutex);
            res.set_content(metrics, "text/plain; version=0.0.4; charset=utf-8");
            ++served[req.path];
        });
        http.Get("/health", [this](const httplib::Request& req, httplib::Response& res) {
            arrived(req.path);
            res.set_content("", "text/plain");
            count(req.path);
        });
    }
};

FakeVllmServer::FakeVllmServer(std::string model, int port, std::uint32_t max_model_len)
    : impl_(std::make_unique<Impl>()) {
    impl_->model = std::move(model);
    impl_->max_model_len = max_model_len;
    // A vector of one default rank, not {FakeVllmRank{}}: that one-element
    // list threw length_error in clang 14's ASan build.
    impl_->metrics = vllm_metrics_text(impl_->model, std::vector<FakeVllmRank>(1));
    impl_->routes();
    impl_->port = port == 0 ? impl_->http.bind_to_any_port("127.0.0.1") : port;
    if (impl_->port <= 0 || (port != 0 && !impl_->http.bind_to_port("127.0.0.1", port)))
        throw std::runtime_error("fake vLLM server: cannot listen on 127.0.0.1:" + std::to_string(port));
    impl_->listener = std::thread([this] { impl_->http.listen_after_bind(); });
}

FakeVllmServer::~FakeVllmServer() { stop(); }

int FakeVllmServer::port() const { return impl_->port; }
std::string FakeVllmServer::url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }
const std::string& FakeVllmServer::model() const { return impl_->model; }

void FakeVllmServer::set_metrics(std::string text) {
    std::lock_guard lock(impl_->mutex);
    impl_->metrics = std::move(text);
}

void FakeVllmServer::set_delay(std::chrono::milliseconds delay) {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->delay = delay;
    }
    impl_->stopped_cv.notify_all(); // a shorter delay ends the waits already longer than it
}

int FakeVllmServer::served(const std::string& path) const {
    std::lock_guard lock(impl_->mutex);
    const auto it = impl_->served.find(path);
    return it == impl_->served.end() ? 0 : it->second;
}

int FakeVllmServer::requested(const std::string& path) const {
    std::lock_guard lock(impl_->mutex);
    const auto it = impl_->requested.find(path);
    return it == impl_->requested.end() ? 0 : it->second;
}

void FakeVllmServer::stop() {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stopped = true;
    }
    impl_->stopped_cv.notify_all();
    impl_->http.stop();
    if (impl_->listener.joinable())
        impl_->listener.join();
}

} // namespace kvscope::test

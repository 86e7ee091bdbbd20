// fake-vllm: a stand-in for a vLLM deployment on loopback, for kvscope's
// tests and for README screenshots (vLLM itself needs a GPU). Its HTTP
// side is FakeVllmServer (/v1/models, /metrics, /health), its KV events
// one FakeVllmPublisher per data-parallel rank, and a load that changes
// every tick: KV usage rising and falling, requests running and waiting,
// counters and latency histograms growing, prefix chains of blocks stored
// and evicted.
//
//   fake-vllm [--port P] [--ranks N] [--seconds S] [--model NAME] [--topic T]
//             [--cache-dtype DTYPE]
//
// --cache-dtype is what vLLM's --kv-cache-dtype would report in
// cache_config_info (default fp8; auto, float16, bfloat16, fp8, fp8_e4m3 or
// fp8_e5m2), with kv_cache_memory_bytes for a Llama-3-8B's KV (kKvValuesPerToken).
//
// Its first stdout line gives the URL, its second the KV-events and replay
// endpoints (comma-separated, rank 0 first), in the options
// `kvscope-cli top` takes:
//   fake-vllm: listening on http://127.0.0.1:PORT (model NAME, N ranks)
//   fake-vllm: --kv-events tcp://...,tcp://... --kv-replay tcp://...,tcp://... --kv-topic T
// It runs until SIGINT/SIGTERM or --seconds pass, and exits 0.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/stop_signals.h"
#include "net/attach/fake_vllm_publisher.h"
#include "net/attach/fake_vllm_server.h"

namespace {

using kvscope::attach::BlockHash;
using kvscope::cli::block_stop_signals;
using kvscope::cli::stopped_within;
using kvscope::attach::BlockRemoved;
using kvscope::attach::BlockStored;
using kvscope::attach::KvEventBatch;
using kvscope::attach::testing::FakeVllmPublisher;
using kvscope::test::FakeVllmRank;
using kvscope::test::FakeVllmServer;

constexpr std::chrono::milliseconds kTick{100};
constexpr double kLoadPeriodSeconds = 20; // one rise and fall of the KV usage
constexpr std::uint32_t kBlockSize = 16;
constexpr std::uint32_t kGpuBlocks = 1024;
constexpr std::size_t kMaxRequests = 16;  // running + waiting at the peak
constexpr std::size_t kMaxCachedBlocks = 96; // the prefix cache at the peak

// The model whose KV the pool holds, for kv_cache_memory_bytes: a
// Llama-3-8B (32 layers, 8 KV heads of dimension 128, K and V).
constexpr std::uint64_t kKvValuesPerToken = 32 * 8 * 128 * 2;

// Bytes per K or V value for vLLM's --kv-cache-dtype choices this stand-in
// knows; "auto" is the model's dtype, bf16 for a Llama-3-8B.
std::uint64_t kv_value_bytes(const std::string& cache_dtype) {
    if (cache_dtype == "fp8" || cache_dtype == "fp8_e4m3" || cache_dtype == "fp8_e5m2")
        return 1;
    if (cache_dtype == "auto" || cache_dtype == "float16" || cache_dtype == "bfloat16")
        return 2;
    throw std::runtime_error("--cache-dtype " + cache_dtype +
                             ": use auto, float16, bfloat16, fp8, fp8_e4m3 or fp8_e5m2");
}

struct Options {
    int port = 0;
    int ranks = 2;
    double seconds = 0; // 0: until killed
    std::string model = "fake-vllm-model";
    std::string topic = "kv-events";
    std::string cache_dtype = "fp8"; // as vLLM run with --kv-cache-dtype fp8 reports it
};

Options read_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string name = argv[i];
        if (i + 1 >= argc)
            throw std::runtime_error(name + " needs a value");
        const std::string value = argv[++i];
        if (name == "--port")
            o.port = std::stoi(value);
        else if (name == "--ranks")
            o.ranks = std::stoi(value);
        else if (name == "--seconds")
            o.seconds = std::stod(value);
        else if (name == "--model")
            o.model = value;
        else if (name == "--topic")
            o.topic = value;
        else if (name == "--cache-dtype")
            o.cache_dtype = value;
        else
            throw std::runtime_error("unknown option " + name);
    }
    if (o.ranks < 1 || o.ranks > 64)
        throw std::runtime_error("--ranks must be 1 to 64");
    kv_value_bytes(o.cache_dtype); // refused now, not after the first line is printed
    return o;
}

// splitmix64: distinct, well-spread block hashes, above 2^63 half the time as vLLM's are.
BlockHash next_hash(BlockHash& state) {
    BlockHash z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// One rank: its /metrics state and its prefix cache, as chains of blocks.
class RankLoad {
public:
    RankLoad(int rank, const std::string& cache_dtype)
        : rank_(rank), hash_state_(0x5eed0000ULL + static_cast<BlockHash>(rank)) {
        metrics_.num_gpu_blocks = kGpuBlocks;
        metrics_.block_size = kBlockSize;
        metrics_.cache_dtype = cache_dtype;
        metrics_.kv_cache_memory_bytes =
            std::uint64_t{kGpuBlocks} * kBlockSize * kKvValuesPerToken * kv_value_bytes(cache_dtype);
    }

    // Advances to `t` seconds; the batch of KV events this tick made.
    KvEventBatch tick(double t, std::uint64_t tick_number) {
        const double phase = 2 * M_PI * t / kLoadPeriodSeconds + rank_;
        const double level = 0.5 - 0.5 * std::cos(phase); // 0..1, starting low
        const double requests = std::round(level * kMaxRequests);
        metrics_.kv_usage = 0.9 * level;
        metrics_.running = std::min(requests, 10.0);
        metrics_.waiting = requests - metrics_.running;
        metrics_.preemptions += level > 0.95 ? 1 : 0;
        metrics_.prompt_tokens += 40 * metrics_.running;
        metrics_.generation_tokens += 8 * metrics_.running;
        metrics_.prefix_queries += 40 * metrics_.running;
        metrics_.prefix_hits += std::round(20 * metrics_.running * level);
        if (metrics_.running > 0) {
            metrics_.ttft.observe(0.02 + 0.1 * level + 0.01 * static_cast<double>(tick_number % 5));
            metrics_.itl.observe(0.004 + 0.01 * level);
        }
        return events(t, static_cast<std::size_t>(level * kMaxCachedBlocks), tick_number);
    }

    const FakeVllmRank& metrics() const { return metrics_; }

private:
    // A new prefix chain most ticks (continuing an older one every third),
    // and the oldest chains evicted while the cache is over `target` blocks.
    KvEventBatch events(double t, std::size_t target, std::uint64_t tick_number) {
        KvEventBatch batch;
        batch.ts = t;
        batch.data_parallel_rank = rank_;
        if (cached_ < target || tick_number % 4 == 0) {
            BlockStored stored;
            stored.block_size = kBlockSize;
            if (!chains_.empty() && tick_number % 3 == 0)
                stored.parent = chains_.back().back();
            const std::size_t length = 1 + tick_number % 4;
            for (std::size_t i = 0; i < length; ++i)
                stored.hashes.push_back(next_hash(hash_state_));
            stored.tokens = length * kBlockSize;
            chains_.push_back(stored.hashes);
            cached_ += length;
            batch.events.emplace_back(std::move(stored));
        }
        BlockRemoved removed;
        while (cached_ > target && !chains_.empty()) {
            // Leaves first, as an LRU evictor frees a prefix's tail before its head.
            const std::vector<BlockHash>& oldest = chains_.front();
            removed.hashes.insert(removed.hashes.end(), oldest.rbegin(), oldest.rend());
            cached_ -= oldest.size();
            chains_.pop_front();
        }
        if (!removed.hashes.empty())
            batch.events.emplace_back(std::move(removed));
        return batch;
    }

    int rank_;
    BlockHash hash_state_;
    FakeVllmRank metrics_;
    std::deque<std::vector<BlockHash>> chains_;
    std::size_t cached_ = 0;
};

std::string joined(const std::vector<std::unique_ptr<FakeVllmPublisher>>& publishers, bool replay) {
    std::string list;
    for (const auto& p : publishers) {
        if (!list.empty())
            list += ',';
        list += replay ? p->replay_endpoint() : p->endpoint();
    }
    return list;
}

int run(const Options& o) {
    const sigset_t stop_signals = block_stop_signals(); // before any thread starts
    FakeVllmServer server(o.model, o.port);
    std::vector<std::unique_ptr<FakeVllmPublisher>> publishers;
    std::vector<RankLoad> loads;
    for (int rank = 0; rank < o.ranks; ++rank) {
        publishers.push_back(std::make_unique<FakeVllmPublisher>(o.topic));
        loads.emplace_back(rank, o.cache_dtype);
    }
    std::printf("fake-vllm: listening on %s (model %s, %d ranks)\n", server.url().c_str(), o.model.c_str(), o.ranks);
    std::printf("fake-vllm: --kv-events %s --kv-replay %s --kv-topic %s\n", joined(publishers, false).c_str(),
                joined(publishers, true).c_str(), o.topic.c_str());
    std::fflush(stdout);
    const double tick_s = std::chrono::duration<double>(kTick).count();
    for (std::uint64_t tick = 0; o.seconds <= 0 || static_cast<double>(tick) * tick_s < o.seconds; ++tick) {
        const double t = static_cast<double>(tick) * tick_s;
        std::vector<FakeVllmRank> ranks;
        for (std::size_t r = 0; r < loads.size(); ++r) {
            publishers[r]->publish(loads[r].tick(t, tick));
            ranks.push_back(loads[r].metrics());
        }
        server.set_metrics(kvscope::test::vllm_metrics_text(o.model, ranks));
        if (stopped_within(stop_signals, kTick))
            break;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(read_options(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fake-vllm: %s\n", e.what());
        return 1;
    }
}

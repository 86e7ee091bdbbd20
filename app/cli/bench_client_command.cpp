// kvscope-cli bench client: load on any OpenAI-compatible server, measured
// from the client's side as vLLM's serving benchmark measures it
// (net/client/bench_client.h does the work; this reads options and prints).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "app/cli/commands.h"
#include "net/client/bench_client.h"
#include "engine/core/error.h"

namespace kvscope::cli {
namespace {

client::BenchClientOptions read_options(Args& args) {
    client::BenchClientOptions o;
    const auto url = args.value("--url");
    if (!url)
        throw Error("bench client needs --url, the server's address, e.g. --url http://127.0.0.1:8000");
    o.url = *url;
    WorkloadSpec& w = o.workload;
    w.requests = static_cast<std::uint32_t>(args.int_or("--requests", 64, 1, 1000000));
    w.distribution = parse_length_distribution(args.value_or("--lengths", "sharegpt"));
    w.prompt_len = static_cast<std::uint32_t>(args.int_or("--prompt-len", 128, 1, 1 << 20));
    w.output_len = static_cast<std::uint32_t>(args.int_or("--output-len", 128, 1, 1 << 20));
    w.max_total = static_cast<std::uint32_t>(args.int_or("--max-total", 512, 16, 1 << 20));
    w.seed = static_cast<std::uint64_t>(args.int_or("--seed", 1, 0, INT64_MAX));
    o.fallback_vocab = static_cast<std::uint32_t>(args.int_or("--vocab", o.fallback_vocab, 4, 1 << 24));
    o.concurrency = static_cast<std::uint32_t>(args.int_or("--concurrency", 8, 1, 4096));
    o.api = client::parse_bench_api(args.value_or("--api", "completions"));
    o.model = args.value_or("--model", "");
    const char* env_key = std::getenv("OPENAI_API_KEY"); // what vLLM's benchmark reads too
    o.api_key = args.value_or("--api-key", env_key ? env_key : "");
    return o;
}

void print_report(const client::BenchClientReport& r) {
    const WorkloadSpec& w = r.workload;
    std::printf("%s at %s, /v1/%s: %u requests (%s lengths, prompt + output <= %u), concurrency %u\n",
                r.model.c_str(), r.url.c_str(), r.api == client::BenchApi::Chat ? "chat/completions" : "completions",
                w.requests, std::string(to_string(w.distribution)).c_str(), w.max_total, r.concurrency);
    std::printf("  %-26s %u\n", "completed", r.completed);
    std::printf("  %-26s %u\n", "failed", r.failed);
    std::printf("  %-26s %.2f\n", "duration, s", r.duration_s);
    std::printf("  %-26s %.2f\n", "requests/s", r.requests_per_second());
    std::printf("  %-26s %.1f\n", "output tokens/s", r.output_tokens_per_second());
    std::printf("  %-26s %.1f\n", "total tokens/s", r.total_tokens_per_second());
    std::printf("  %-26s %.1f / %.1f / %.1f  (client: request sent -> first token)\n", "TTFT p50 / p90 / p99, ms", r.ttft_ms.p50_ms, r.ttft_ms.p90_ms, r.ttft_ms.p99_ms);
    std::printf("  %-26s %.1f / %.1f\n", "ITL p50 / p99, ms", r.itl_ms.p50_ms, r.itl_ms.p99_ms);
    std::printf("  %-26s %.1f / %.1f\n", "end-to-end p50 / p99, ms", r.e2e_ms.p50_ms, r.e2e_ms.p99_ms);
    if (!r.first_error.empty())
        std::printf("  first error: %s\n", r.first_error.c_str());
}

} // namespace

int run_bench_client(Args& args) {
    const client::BenchClientOptions options = read_options(args);
    const bool json = args.flag("--json");
    args.finish();
    const client::BenchClientReport report = client::run_bench_client(options);
    if (json)
        std::printf("%s\n", client::to_json(report).dump(2).c_str());
    else
        print_report(report);
    return 0;
}

} // namespace kvscope::cli

// net/client: `kvscope-cli bench client`, a load generator for any
// OpenAI-compatible server (kvscope-cli serve, llama.cpp's llama-server,
// vLLM), after vLLM's benchmarks/benchmark_serving.py. It draws a workload
// with engine/workload's make_workload (same seed, same prompts for every
// server), sends the prompts as token-id arrays with `max_tokens` = the
// drawn output length and `ignore_eos`, streams every reply to time each
// token, and summarizes: throughput, TTFT, inter-token and end-to-end
// latency. A client of any server: it uses nothing of kvscope_serve's.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/client/sse_reader.h"
#include "engine/core/percentiles.h"
#include "engine/workload/workload.h"

namespace kvscope::client {

enum class BenchApi : std::uint8_t {
    Completions, // POST /v1/completions, the prompt as token ids: exact lengths
    Chat,        // POST /v1/chat/completions, the prompt as words: lengths approximate
};
std::string_view to_string(BenchApi api);
BenchApi parse_bench_api(std::string_view word); // "completions" | "chat"

struct BenchClientOptions {
    std::string url;        // http(s)://host:port[/prefix]; a trailing /v1 is accepted
    WorkloadSpec workload;  // lengths, count, seed; vocab and max_total follow the server
    std::uint32_t concurrency = 1; // requests in flight, one connection each
    BenchApi api = BenchApi::Completions;
    std::string model;      // empty: the first model GET /v1/models lists
    std::string api_key;    // sent as "Authorization: Bearer KEY" when set
    std::uint32_t fallback_vocab = 32000; // when /v1/models does not report meta.n_vocab
};

// The model GET /v1/models describes. max_model_len is vLLM's and
// kvscope's field; n_vocab is the `meta` llama.cpp's server and kvscope add.
struct ServedModel {
    std::string id;
    std::optional<std::uint32_t> max_model_len;
    std::optional<std::uint32_t> n_vocab;
};
// The entry named `wanted` (any when empty) of a /v1/models body; throws
// kvscope::Error when there is none.
ServedModel parse_models_response(const nlohmann::json& body, const std::string& wanted);

// The workload the client sends: options.workload with the server's
// vocabulary (else the fallback), max_total capped to the model's context,
// and each request asking for exactly its drawn output length.
WorkloadSpec workload_for_server(const BenchClientOptions& options, const ServedModel& model);

// The JSON body of one streamed request.
nlohmann::json request_body(const WorkloadRequest& request, BenchApi api, const std::string& model);

// The chat prompt standing for `prompt`: one common English word per token
// id after the first (the BOS: the chat template adds its own), so the
// same seed gives the same text. Most of these words are one token in the
// usual vocabularies, which makes the length about right, not exact.
std::string chat_prompt_text(const std::vector<TokenId>& prompt);

using BenchClock = std::chrono::steady_clock;

// What one request came to.
struct RequestOutcome {
    bool ok = false;
    std::string error;               // why it failed
    std::uint32_t prompt_tokens = 0; // the usage chunk's, else what was sent
    std::uint32_t output_tokens = 0; // the usage chunk's, else content chunks
    double ttft_s = 0;               // request sent -> first content chunk
    std::vector<double> itl_s;       // gaps between content chunks
    double e2e_s = 0;                // request sent -> end of the stream
};

// One streamed reply, read as it arrives. A content chunk is one whose
// first choice carries non-empty text (completions) or delta.content
// (chat): role-only and finish-only chunks carry no token.
class ResponseStream {
public:
    ResponseStream(BenchApi api, BenchClock::time_point sent) : api_(api), sent_(sent) {}

    // The HTTP status, when the headers arrive: >= 400 fails the request
    // with the error message of its body.
    void on_status(int status) { status_ = status; }
    // False once the request has failed: reading on is pointless, and a
    // server that keeps sending after [DONE] would keep the client forever.
    bool feed(std::string_view bytes, BenchClock::time_point now);
    // The body has ended at `now`; `transport_error` is the HTTP library's
    // word when the connection broke (empty when it did not).
    RequestOutcome finish(BenchClock::time_point now, const std::string& transport_error,
                          std::uint32_t prompt_tokens_sent);

private:
    void on_field(const SseField& field, BenchClock::time_point now);
    void on_chunk(const nlohmann::json& chunk, BenchClock::time_point now);
    void fail(std::string message);

    BenchApi api_;
    BenchClock::time_point sent_;
    int status_ = 0;
    SseReader reader_;
    std::string error_body_; // a failed status's body
    std::string error_;      // the first error event
    bool done_ = false;      // data: [DONE] seen
    std::optional<BenchClock::time_point> last_content_;
    RequestOutcome outcome_;
    std::uint32_t content_chunks_ = 0;
    std::optional<std::uint32_t> usage_prompt_, usage_completion_;
};


struct BenchClientReport {
    std::string url;
    std::string model;
    BenchApi api = BenchApi::Completions;
    WorkloadSpec workload; // as sent (vocab and max_total from the server)
    std::uint32_t concurrency = 1;
    std::uint32_t completed = 0, failed = 0;
    double duration_s = 0;               // first request sent -> last one ended
    std::uint64_t prompt_tokens = 0;     // of the completed requests
    std::uint64_t output_tokens = 0;
    Percentiles ttft_ms, itl_ms, e2e_ms; // of the completed requests (engine/core/percentiles.h)
    std::string first_error;             // of the first request that failed, by index

    double requests_per_second() const;
    double output_tokens_per_second() const;
    double total_tokens_per_second() const; // prompt + output
};

// The report of finished outcomes (by request index) that took `duration_s`.
BenchClientReport summarize(const std::vector<RequestOutcome>& outcomes, double duration_s);

// Asks GET /v1/models, draws the workload, runs it with `concurrency`
// connections. Throws kvscope::Error when the server cannot be reached or
// lists no usable model; failed requests are counted, not thrown.
BenchClientReport run_bench_client(const BenchClientOptions& options);

// The --json output: completed, failed, duration_s, requests_per_second,
// output_tokens_per_second, total_tokens_per_second, ttft_ms{p50,p90,p99},
// itl_ms{p50,p99}, e2e_ms{p50,p99}, then what the run was.
nlohmann::ordered_json to_json(const BenchClientReport& report);

} // namespace kvscope::client

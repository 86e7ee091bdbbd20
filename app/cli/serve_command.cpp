// kvscope-cli serve: the paged engine as an OpenAI-compatible HTTP server
// (net/serve/http_server.h). Listens first, so /health answers 503 while the
// model loads; prints its URL as the first stdout line once it is ready;
// on SIGINT or SIGTERM stops taking requests, lets those in flight finish
// for up to --drain-seconds, aborts the rest and exits 0.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "app/cli/stop_signals.h"
#include "engine/service/engine_service.h"
#include "net/serve/http_server.h"
#include "net/serve/metrics_registry.h"
#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope::cli {
namespace {

struct ServeSettings {
    std::string model_path;
    std::string served_name; // empty: the file's stem
    serve::HttpServerOptions http;
    EngineConfig engine;
    ServiceOptions service;
    std::chrono::milliseconds drain{};
    bool vllm_names = false;
};

bool read_vllm_names(Args& args) {
    const std::string names = args.value_or("--metrics-names", "kvscope");
    if (names != "kvscope" && names != "vllm")
        throw Error("--metrics-names must be kvscope or vllm, got '" + names + "'");
    return names == "vllm";
}

ServeSettings read_settings(Args& args) {
    ServeSettings s;
    s.model_path = required_model_path(args);
    s.served_name = args.value_or("--served-model-name", "");
    s.http.host = args.value_or("--host", s.http.host);
    s.http.port = static_cast<int>(args.int_or("--port", s.http.port, 0, 65535));
    const char* env_key = std::getenv("KVSCOPE_API_KEY");
    s.http.api_key = args.value_or("--api-key", env_key ? env_key : "");
    s.http.http_threads = static_cast<std::size_t>(args.int_or("--http-threads", 512, 1, 65536));
    s.http.log_format = serve::parse_log_format(args.value_or("--log-format", "text"));
    s.http.connection.max_per_client =
        static_cast<std::size_t>(args.int_or("--max-connections-per-client", 0, 0, 1 << 20));
    s.service.max_waiting = static_cast<std::uint32_t>(args.int_or("--max-waiting", 1024, 1, 1 << 24));
    s.drain = std::chrono::milliseconds(
        static_cast<std::int64_t>(1000 * args.number_or("--drain-seconds", 5, 0, 24 * 3600)));
    s.vllm_names = read_vllm_names(args);
    s.engine.kv_dtype = parse_kv_dtype(args.value_or("--kv-dtype", "f16"));
    read_serving_options(args, s.engine, kDefaultKvBudgetMib);
    s.engine.scheduling_policy = SchedulingPolicy::Fcfs; // requests in arrival order, as vLLM's default
    return s;
}

} // namespace

int run_serve(Args& args) {
    const ServeSettings s = read_settings(args);
    args.finish();
    const sigset_t stop_signals = block_stop_signals();

    serve::HttpServer server(s.http);
    const int port = server.start();

    const auto model = std::make_shared<const Model>(s.model_path);
    const std::string name =
        s.served_name.empty() ? std::filesystem::path(s.model_path).stem().string() : s.served_name;
    serve::MetricsRegistry metrics({.model_name = name, .vllm_names = s.vllm_names, .engine = s.engine});
    EngineService service(s.engine, model, s.service, &metrics);
    const ChatTemplate chat = ChatTemplate::for_model(model->file(), service.tokenizer());
    const std::uint32_t context = model->config().context_length;
    const serve::ServedModel served{.name = name,
                                    .max_model_len = context,
                                    .n_ctx_train = context,
                                    .tokenizer = &service.tokenizer(),
                                    .chat_template = &chat};
    server.serve({&service, served, &metrics});
    std::printf("kvscope-cli serve: listening on http://%s:%d (model %s, %u tokens of context)\n", s.http.host.c_str(),
                port, name.c_str(), served.max_model_len);
    std::fflush(stdout);

    const int signal = wait_for_stop_signal(stop_signals);
    logger("app")->info("{}: draining, up to {} ms for the requests in flight", strsignal(signal), s.drain.count());
    server.begin_drain();
    service.drain(s.drain);
    server.stop();
    logger("app")->info("stopped");
    return 0;
}

} // namespace kvscope::cli

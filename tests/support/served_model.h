// A model served in-process as `kvscope-cli serve` serves it: an
// EngineService, the model's chat template, and the HTTP server on a free
// port of 127.0.0.1, with a client to post to it. For tests of the server
// end to end over HTTP.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "engine/runtime/model.h"
#include "engine/service/engine_service.h"
#include "engine/tokenizer/chat_template.h"
#include "net/serve/http_server.h"

namespace kvscope::test {

class ServedModel {
public:
    // `name`: the served model's name; `engine`: its engine's settings.
    ServedModel(const std::string& path, const std::string& name, const EngineConfig& engine, int http_threads)
        : model_(std::make_shared<const Model>(path)), service_(engine, model_),
          chat_(ChatTemplate::for_model(model_->file(), service_.tokenizer())), server_(options(http_threads)),
          client_("127.0.0.1", server_.start()) {
        const std::uint32_t context = model_->config().context_length;
        server_.serve({&service_, {name, context, context, &service_.tokenizer(), &chat_}, nullptr});
        client_.set_read_timeout(120);
    }
    ~ServedModel() { server_.stop(); } // before the service it routes to
    ServedModel(const ServedModel&) = delete;
    ServedModel& operator=(const ServedModel&) = delete;

    // The status and the JSON body of a POST; status 0 when no answer came.
    std::pair<int, nlohmann::json> post(const char* path, const nlohmann::json& body) {
        const httplib::Result r = client_.Post(path, body.dump(), "application/json");
        if (!r)
            return {0, nlohmann::json()};
        return {r->status, nlohmann::json::parse(r->body)};
    }
    // The same, the body as it came (a stream's events); status 0 when no answer came.
    std::pair<int, std::string> post_text(const char* path, const nlohmann::json& body) {
        const httplib::Result r = client_.Post(path, body.dump(), "application/json");
        return r ? std::pair(r->status, r->body) : std::pair(0, std::string());
    }

private:
    static serve::HttpServerOptions options(int http_threads) {
        serve::HttpServerOptions o;
        o.port = 0;
        o.http_threads = http_threads;
        return o;
    }

    std::shared_ptr<const Model> model_;
    EngineService service_;
    ChatTemplate chat_;
    serve::HttpServer server_;
    httplib::Client client_;
};

} // namespace kvscope::test

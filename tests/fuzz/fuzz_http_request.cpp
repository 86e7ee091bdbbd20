// The server's request path on arbitrary bytes, as a hostile client could
// send them: the HTTP reader (net/serve/request_reader.h: Beast's parser
// with the connection's limits, strict framing, the body decoded and cut
// off at the limit), fed in pieces of a size the first byte chooses, and
// then, for a request it reads whole, the OpenAI request parser on its body
// (a completion or a chat, as the path says) against a tiny synthetic
// llama with a ChatML template. Every input is read, refused with an
// invalid_request_error of a status the server documents, or left waiting
// for more bytes; a body read is within the limit; a parsed request's
// prompt is made of the vocabulary's ids; the OpenAI parser throws
// nothing but ApiError. Anything else (a crash, another exception, an ASan
// or UBSan report, an allocation far beyond the limit) is a finding.
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/log.h"
#include "engine/model/gguf_file.h"
#include "engine/model/synthetic_model.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocabulary.h"
#include "fuzz_support.h"
#include "net/serve/openai_request.h"
#include "net/serve/request_reader.h"

namespace {

using kvscope::fuzz::require;
namespace serve = kvscope::serve;

const kvscope::ModelGeometry kTiny{.name = "fuzz-tiny",
                                   .architecture = "llama",
                                   .dim = 32,
                                   .n_layers = 1,
                                   .n_heads = 4,
                                   .n_kv_heads = 2,
                                   .ffn_dim = 64,
                                   .vocab = 320,
                                   .context = 96};
constexpr const char* kChatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Small limits, so that the fuzzer reaches them.
serve::ConnectionLimits limits() {
    serve::ConnectionLimits l;
    l.max_url_bytes = 256;
    l.max_head_bytes = 1024;
    l.max_header_fields = 16;
    return l;
}
const serve::ConnectionLimits kLimits = limits();
constexpr std::size_t kMaxBody = 4096;

std::unique_ptr<kvscope::Tokenizer> tokenizer;
std::unique_ptr<kvscope::ChatTemplate> chat;
serve::ServedModel served;

bool documented(const serve::ApiError& e) {
    const int s = e.status();
    return (s == 400 || s == 413 || s == 414 || s == 415 || s == 431) && e.type() == "invalid_request_error";
}

// The OpenAI side of a request read whole.
void parse_openai(const serve::HttpRequest& request) {
    const bool chat_api = request.path == "/v1/chat/completions";
    if (request.method != "POST" || (!chat_api && request.path != "/v1/completions"))
        return;
    const serve::RequestLimits request_limits{.max_body_bytes = kMaxBody};
    try {
        const nlohmann::json body = serve::parse_body(request.body, request_limits);
        const serve::GenerationRequest g = chat_api ? serve::parse_chat_request(body, served, request_limits)
                                                    : serve::parse_completion_request(body, served, request_limits);
        for (const kvscope::TokenId id : g.prompt)
            require(id >= 0 && id < tokenizer->n_tokens(), "a prompt is made of the vocabulary's ids");
    } catch (const serve::ApiError&) {
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    kvscope::set_log_level("off");
    const int fd = memfd_create("fuzz-tiny.gguf", 0); // stays open: the file is read from it
    require(fd >= 0, "memfd_create works");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    kvscope::write_synthetic_model(kTiny, kvscope::GgmlType::F32, 1, path);
    const kvscope::GgufFile file(path);
    tokenizer = std::make_unique<kvscope::Tokenizer>(kvscope::read_vocabulary(file));
    chat = std::make_unique<kvscope::ChatTemplate>(kChatml, tokenizer->token_text(tokenizer->bos()),
                                                   tokenizer->token_text(tokenizer->eos()));
    served = {"fuzz", kTiny.context, kTiny.context, tokenizer.get(), chat.get()};
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const std::size_t piece = 1 + data[0] % 64; // bytes a read brings
    const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    serve::RequestReader reader(kLimits, kMaxBody);
    std::string buffered; // what the connection holds: read, not yet taken
    std::size_t sent = 0;
    using Step = serve::RequestReader::Step;
    while (reader.step() == Step::NeedMore || reader.step() == Step::Continue) {
        if (reader.step() == Step::NeedMore) {
            if (sent == bytes.size())
                return 0; // waits for more (the request timeout ends it)
            const std::size_t n = std::min(piece, bytes.size() - sent);
            buffered.append(bytes.substr(sent, n));
            sent += n;
        }
        const std::size_t taken = reader.feed(buffered);
        require(taken <= buffered.size(), "the reader takes no more than it is offered");
        buffered.erase(0, taken);
    }
    if (reader.step() == Step::Failed) {
        require(documented(reader.error()), "a refused request gets a documented invalid_request_error");
        return 0;
    }
    const serve::HttpRequest request = reader.take("fuzz");
    require(request.body.size() <= kMaxBody, "a body read is within the limit");
    require(!request.method.empty(), "a request read has a method");
    parse_openai(request);
    return 0;
}

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/engine_snapshot.h"
#include "engine/kv/kv_cache_manager.h"

namespace kvscope {

// Why Engine::add_request refused a request: nothing of it ran and no
// output will come for it.
enum class RefusalReason : std::uint8_t {
    EmptyPrompt,       // no prompt tokens
    BadCount,          // n or max_new_tokens is 0, or n is above kMaxSamplesPerRequest
    OverContext,       // prompt + max_new_tokens exceed the model's context
    TokenOutsideVocab, // a prompt token id the model does not have
    BadSampling,       // sampling parameters out of range
    OverPool,          // can never fit the KV pool, even empty
};

// A refusal: what was asked, the limit it broke, and why in words a person
// can act on (the same words in the app, the CLI and the server's error).
struct RequestRefusal {
    RefusalReason reason = RefusalReason::EmptyPrompt;
    std::uint32_t prompt_tokens = 0; // asked
    std::uint32_t max_new_tokens = 0;
    std::uint32_t n = 0;
    std::optional<KvRefusal> pool;   // with OverPool: the blocks asked and what the pool holds
    std::string message;
};

// What add_request answers: the new request's id, or why there is none.
class Admission {
public:
    explicit Admission(RequestId id) : id_(id) {}
    explicit Admission(RequestRefusal refusal) : refusal_(std::move(refusal)) {}

    bool accepted() const { return !refusal_; }
    // The id; throws kvscope::Error with the refusal's message when refused
    // (for callers to whom a refusal is a bug, such as benchmarks of valid
    // requests and tests).
    RequestId id() const {
        if (refusal_)
            throw Error("request refused: " + refusal_->message);
        return id_;
    }
    const RequestRefusal* refusal() const { return refusal_ ? &*refusal_ : nullptr; } // null when accepted

private:
    RequestId id_ = 0;
    std::optional<RequestRefusal> refusal_;
};

} // namespace kvscope

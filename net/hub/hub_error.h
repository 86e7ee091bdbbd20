// net/hub: the one error type of the Hugging Face Hub client. Its kind lets
// a front end (and a test) tell the failures apart; its message says what
// to do about each.
#pragma once

#include <string>

#include "engine/core/error.h"

namespace kvscope::hub {

enum class HubErrorKind {
    BadReference,      // not ORG/NAME[:QUANT]
    NoSuchRepo,        // the hub does not know the repository (404, X-Error-Code RepoNotFound)
    Gated,             // 401/403: a gated or private repository, no token or one without access
    NoGguf,            // the repository holds no model GGUF
    NoSuchQuant,       // no GGUF of the asked quantization (the message lists those there are)
    DiskFull,          // not enough free space for the download, or a write ran out of it
    ChecksumMismatch,  // the downloaded bytes' hash differs from the hub's
    Network,           // no answer: DNS, connect, TLS, a dropped connection after the retries
    Cancelled,         // the progress callback asked to stop (the partial file stays for a resume)
    Http,              // any other refusal, with its status
};

class HubError : public Error {
public:
    HubError(HubErrorKind kind, const std::string& message) : Error(message), kind_(kind) {}
    HubErrorKind kind() const { return kind_; }

private:
    HubErrorKind kind_;
};

} // namespace kvscope::hub

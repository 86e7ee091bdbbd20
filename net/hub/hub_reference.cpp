#include "net/hub/hub_reference.h"

#include <cctype>

#include "net/hub/hub_error.h"

namespace kvscope::hub {
namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

} // namespace

bool is_valid_repo_id(std::string_view repo) {
    if (repo.empty() || repo.size() > 256)
        return false;
    int slashes = 0;
    bool after_special = true; // the first character may not be special
    for (char c : repo) {
        if (is_word_char(c)) {
            after_special = false;
        } else if (c == '/' || c == '.' || c == '-') {
            if (after_special)
                return false;
            slashes += c == '/';
            after_special = true;
        } else {
            return false;
        }
    }
    return !after_special && slashes == 1;
}

HubReference parse_hub_reference(std::string_view text) {
    const std::size_t colon = text.find(':');
    HubReference ref{std::string(text.substr(0, colon)), {}};
    if (colon != std::string_view::npos)
        for (char c : text.substr(colon + 1))
            ref.quant += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    bool quant_ok = colon == std::string_view::npos || !ref.quant.empty();
    for (char c : ref.quant)
        quant_ok = quant_ok && is_word_char(c);
    if (!is_valid_repo_id(ref.repo) || !quant_ok)
        throw HubError(HubErrorKind::BadReference,
                       "'" + std::string(text) +
                           "' is not a Hugging Face model: expected ORG/NAME or ORG/NAME:QUANT, "
                           "e.g. ggml-org/Qwen3-0.6B-GGUF:Q8_0");
    return ref;
}

std::optional<HubReference> hub_reference_of_path(std::string_view path) {
    if (!path.starts_with(kHubScheme))
        return std::nullopt;
    return parse_hub_reference(path.substr(kHubScheme.size()));
}

} // namespace kvscope::hub

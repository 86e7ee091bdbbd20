// net/hub: what a person types to name a model on the Hugging Face Hub, as
// llama.cpp's -hf spells it: ORG/NAME[:QUANT] ("ggml-org/Qwen3-0.6B-GGUF:Q8_0"),
// also written hf://ORG/NAME[:QUANT] where a file path is expected.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kvscope::hub {

struct HubReference {
    std::string repo;  // "ORG/NAME"
    std::string quant; // upper case ("Q4_K_M"); empty: the default choice (gguf_choice.h)
    std::string text() const { return quant.empty() ? repo : repo + ":" + quant; }
};

// The scheme that marks a hub reference where a model path is accepted.
inline constexpr std::string_view kHubScheme = "hf://";

// llama.cpp's rule for a repository id (common/hf-cache.cpp): letters,
// digits and '_', with '/', '.', '-' only between them, exactly one '/',
// at most 256 characters.
bool is_valid_repo_id(std::string_view repo);

// Throws HubError(BadReference) naming the text for anything but
// ORG/NAME[:QUANT] with a valid repository id and a quant of letters,
// digits and '_'.
HubReference parse_hub_reference(std::string_view text);

// "hf://ORG/NAME[:QUANT]" → its reference; nullopt for any other text (a
// file path). Throws like parse_hub_reference when the scheme is there but
// the rest is not a reference.
std::optional<HubReference> hub_reference_of_path(std::string_view path);

} // namespace kvscope::hub

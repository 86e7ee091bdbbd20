// net/hub: which GGUF files of a repository make the model asked for. The
// names follow the conventions llama.cpp's -hf reads (common/download.cpp):
// "NAME-Q4_K_M.gguf" or "NAME.Q4_K_M.gguf" carries its quantization as the
// last '-'/'.' separated word, and a split model is
// "NAME-Q4_K_M-00001-of-00003.gguf" ... "-00003-of-00003.gguf".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope::hub {

// One file of a repository as the hub's tree listing gives it.
struct RepoFile {
    std::string path;       // inside the repository ("sub/NAME-Q4_K_M.gguf")
    std::uint64_t size = 0; // bytes (the LFS object's size for an LFS file)
    std::string oid;        // the LFS object's SHA-256 (64 hex), else git's blob SHA-1 (40 hex); may be empty
    bool lfs = false;       // oid is the SHA-256 of the content
};

struct GgufName {
    std::string stem;   // the path without ".gguf" and the split suffix
    std::string quant;  // upper case: "Q4_K_M", "F16", "IQ4_XS"; empty when the name has none
    int part = 1;       // a split model's part number, from 1
    int parts = 1;      // how many parts it has
};

// nullopt for a path not ending in ".gguf" (any case).
std::optional<GgufName> parse_gguf_name(std::string_view path);

// The digits of a quant's first number: Q4_K_M → 4, F16 → 16, IQ4_XS → 4;
// 0 when it has none.
int quant_bits(std::string_view quant);

// A model's weights, as opposed to the sidecars llama.cpp also keeps in GGUF
// repositories (mmproj, imatrix, mtp-, eagle3-, dflash-, dspark-).
bool is_model_gguf(std::string_view path);

// The quants among the model GGUFs, sorted, each once ("Q4_K_M, Q8_0, ...").
std::vector<std::string> available_quants(const std::vector<RepoFile>& files);

// The quant asked for when none is given, as llama.cpp's -hf chooses first.
inline constexpr std::string_view kDefaultQuant = "Q4_K_M";

// The files of the model of `quant` in `files`, the parts of a split model
// in part order. An empty quant takes Q4_K_M, else the quant whose bits are
// closest to 4 (the larger at a tie), else the first model GGUF. Throws
// HubError NoGguf when there is no model GGUF, NoSuchQuant (listing those
// there are) when `quant` is given and not there, and NoSuchQuant when a
// split model lacks a part. `repo` names the repository in the messages.
std::vector<RepoFile> choose_gguf(const std::vector<RepoFile>& files, std::string_view quant, std::string_view repo);

} // namespace kvscope::hub

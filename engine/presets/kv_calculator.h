// The KV memory calculator as a person asks it: a model (preset, GGUF file or
// bare dimensions), tokens and sequences, optionally a device and the format
// of the weights beside the cache. Turned here into the KvMemoryQuestion that
// kv_memory_calc answers, so `kvscope-cli calc` and the app's calculator
// dialog share one implementation and show the same numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kv/kv_memory_calc.h"
#include "engine/model/ggml_type.h"
#include "engine/presets/model_presets.h"

namespace kvscope {

struct ModelConfig;
struct TensorStats;

// What the calculator needs of a model: its KV shape (per layer: full
// attention or a window; or a latent cache) and, for a device, the bytes of
// its weights.
struct CalcModel {
    std::string name;
    KvGeometry kv{};                                // MLA: n_layers only (the latent says the rest)
    std::uint64_t parameters = 0;                   // 0: unknown (bare dimensions)
    std::optional<std::uint64_t> file_weight_bytes{}; // a GGUF's real tensor bytes
    std::uint64_t context = 4096;                   // the default tokens per sequence
    std::vector<std::uint32_t> layer_windows{};     // each layer's window, 0 full; empty: all full
    std::optional<KvLatent> latent{};               // MLA: replaces kv's heads and the windows
    std::uint32_t n_heads = 0;                      // query heads; 0: unknown
};

// Windows as the preset's layers run them (ModelGeometry::is_window_layer).
CalcModel calc_model(const ModelGeometry& preset);
// `fallback_name` names the model when its metadata has no general.name.
CalcModel calc_model(const ModelConfig& config, const TensorStats& stats, const std::string& fallback_name);
// Reads the GGUF file; throws kvscope::Error naming the file and the problem.
CalcModel calc_model_from_file(const std::string& gguf_path);

struct CalcDevice {
    std::string name;
    std::uint64_t memory_bytes = 0;
};

// The GGUF weight types people download, named as llama.cpp's file names
// do ("f16", "q8_0", "q4_k", ...).
std::span<const GgmlType> weight_formats();
std::string weight_format_name(GgmlType type);
std::string weight_format_names(); // "f32, f16, ..."
// Bytes of `parameters` weights in that format: whole quantization blocks,
// scales included. Throws kvscope::Error listing the formats on an unknown one.
std::uint64_t weight_bytes(std::uint64_t parameters, std::string_view format);

struct CalcInputs {
    CalcModel model;
    std::uint64_t tokens_per_sequence = 0;
    std::uint64_t sequences = 1;
    std::uint32_t block_size = 16;
    std::uint64_t chunk_tokens = 512; // tokens computed a step (max_num_batched_tokens)
    bool keep_whole = false;          // --swa-full: window layers keep every token
    std::optional<CalcDevice> device{};
    // The weights' format next to the cache on the device; none: the file's
    // own bytes when the model came from a file, else f16.
    std::optional<std::string> weights{};
    double memory_fraction = 0.9;
};

struct CalcResult {
    KvMemoryQuestion question;
    std::string weights = "-"; // "-" (no device), "as in the file", or the format
    std::vector<KvMemoryAnswer> answers; // one per KV dtype of kv_dtypes_for(question), all_kv_dtypes() order
};

// Throws kvscope::Error when a device is given for a model of unknown size.
CalcResult run_kv_calculator(const CalcInputs& inputs);
} // namespace kvscope

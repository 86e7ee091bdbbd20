// The models the KV calculator names (`kvscope-cli calc --preset`, the
// calculator dialog's list): the model presets kvscope builds and runs, and
// models it cannot run, kept for comparison.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/presets/kv_calculator.h"
#include "engine/presets/model_presets.h"

namespace kvscope {

// A model the calculator names: every model_presets() entry (kvscope builds
// and runs them), then models it cannot run, listed for comparison — the
// three ways a 2026 model saves KV memory (fewer KV heads, windows,
// latents) side by side.
struct CalcPreset {
    CalcModel model;
    std::string architecture;              // GGUF general.architecture
    std::optional<ModelGeometry> geometry; // its shape where a ModelGeometry holds it (not MLA)
    std::string calculator_only;           // why kvscope cannot load or make it; empty: a model preset
};

// model_presets() in their order, then the calculator-only models.
std::span<const CalcPreset> calc_presets();
// Throws kvscope::Error listing the known names.
const CalcPreset& find_calc_preset(std::string_view name);

} // namespace kvscope

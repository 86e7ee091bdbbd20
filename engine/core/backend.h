#pragma once

#include <string>
#include <string_view>

#include "engine/core/device.h"

namespace kvscope {

// Where the forward pass and the KV pool run. Auto: CUDA when the binary
// was built with it and a device answers, else the CPU.
enum class Backend : unsigned char { Auto, Cpu, Cuda };

std::string_view to_string(Backend backend);
// "auto", "cpu" or "cuda"; throws kvscope::Error naming the choices.
Backend parse_backend(std::string_view word);

// The backend that runs (Cpu or Cuda, never Auto) for a request on a
// machine as `device` describes it. Throws kvscope::Error saying why when
// CUDA is asked for and there is no device (device.note).
Backend resolve_backend(Backend requested, const ComputeDevice& device);

} // namespace kvscope

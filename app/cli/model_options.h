#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/core/backend.h"
#include "engine/kv/kv_ids.h"
#include "engine/engine.h"
#include "engine/runtime/sampler.h"

namespace kvscope::cli {

// --model FILE, --model hf://ORG/NAME[:QUANT] or -hf ORG/NAME[:QUANT]
// (llama.cpp's spelling), required. A Hugging Face model comes back as its
// file in the cache, pulled first when it is not there (net/hub/model_path.h),
// with a progress line on a terminal.
std::string required_model_path(Args& args);
// The same when the model is optional (calc, bench serve's --preset).
std::optional<std::string> optional_model_path(Args& args);
// FILE as given, hf://... resolved as above: for a model named otherwise
// (info's FILE).
std::string resolve_model_path(const std::string& text);
// --backend auto|cpu|cuda (default auto: CUDA when built with it and a
// device answers). Resolved later, where the model's shape is known.
Backend read_backend(Args& args);
// --threads N: the kernels' thread count (default 0: one per core).
int read_threads(Args& args);
// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --seed.
SamplingParams read_sampling(Args& args);
// What generate and chat share: the engine's --kv-dtype, --block-size,
// --backend and --threads, and the request's -n (default
// `default_new_tokens`) and sampling options.
struct GenerateSettings {
    EngineConfig engine;
    RequestParams request;
};
GenerateSettings read_generate_settings(Args& args, std::uint32_t default_new_tokens);
// What the serving commands (bench serve, serve) share: the KV pool's
// --kv-budget-mib (default `default_budget_mib`) and --block-size, the
// scheduler's --max-seqs (default 256), --max-batched-tokens and
// --preemption, and --threads and --backend. The KV dtype is each command's.
void read_serving_options(Args& args, EngineConfig& config, double default_budget_mib);
// "1,403,407" -> {1, 403, 407}; throws kvscope::Error on anything else.
std::vector<TokenId> parse_token_ids(const std::string& text);

} // namespace kvscope::cli

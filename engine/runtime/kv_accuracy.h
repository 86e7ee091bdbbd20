// engine/runtime: what a KV dtype costs in accuracy, measured on a text —
// perplexity, KL divergence and top-1 agreement against f32 KV — next to
// what it saves in bytes (from KvLayout).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_ids.h"
#include "engine/runtime/model.h"

namespace kvscope {

struct KvAccuracyOptions {
    // Measured in this order after the f32 baseline, which is always
    // measured (and listed first) whether or not it is named here.
    std::vector<KvDtype> kv_dtypes;
    std::uint32_t context = 0; // window length in tokens; 0: the model's context (or the whole text)
    std::uint32_t block_size = 16;
    // Per dtype as choose_backend decides: auto runs a dtype the CUDA pass
    // cannot run yet on the CPU; cuda throws for it.
    Backend backend = Backend::Cpu;
    int threads = 0; // the CPU kernels' threads per call (0: one per core)
    // Called on the measuring thread after each evaluation window with the
    // windows scored so far and in all, so a front end can show progress.
    std::function<void(std::size_t windows_done, std::size_t windows)> on_window;
    // Polled before every position: once it reads true the measurement
    // stops and throws KvAccuracyCancelled. Another thread may set it; it
    // must outlive the call.
    const std::atomic<bool>* cancel = nullptr;
};

// What measure_kv_accuracy throws when KvAccuracyOptions::cancel asked it to stop.
class KvAccuracyCancelled : public Error {
public:
    KvAccuracyCancelled() : Error("the KV accuracy measurement was cancelled") {}
};

struct KvAccuracyRow {
    KvDtype kv_dtype = KvDtype::F32;
    // KvLayout::bytes_per_token(): what each token adds, all layers, K and
    // V, scales included -- the figure `kvscope-cli calc` and the app show.
    // KIVI's f16 tail (one per sequence) and fp8's scales (one set per pool)
    // are not per token: spread over a text they would make this figure
    // depend on the text's length.
    double bytes_per_token = 0;
    double saving_vs_f16 = 0;        // f16 bytes per token / these
    double perplexity = 0;
    double delta_pct = 0;      // perplexity change against f32 KV, percent
    double kld = 0;            // mean KL(f32 KV || this dtype), nats per position
    double top1_agreement = 0; // share of positions whose most likely token matches f32 KV's
    Backend backend = Backend::Cpu; // where it ran
};

struct KvAccuracyReport {
    std::vector<KvAccuracyRow> rows; // f32 first
    std::size_t tokens = 0;          // of the text
    std::size_t scored = 0;          // positions scored per dtype
    std::size_t windows = 0;
    std::uint32_t context = 0;       // window length used
};

// How a text longer than the context is evaluated: cut into windows of at
// most `context` tokens, each run from an empty KV cache. Consecutive
// windows overlap by one token (the next window starts with the previous
// one's last token), so that every token but the first is predicted exactly
// once and no token is invented. Throws kvscope::Error when fewer than 2
// tokens are given or the context is below 2.
std::vector<std::span<const TokenId>> evaluation_windows(std::span<const TokenId> tokens, std::uint32_t context);

// The KV dtypes this model can run with on this build and backend: those
// the forward pass accepts. Always starts with f32.
std::vector<KvDtype> runnable_kv_dtypes(const Model& model, Backend backend);

// Teacher-forces `tokens` through the paged KV cache once per dtype, all
// dtypes in lockstep one position at a time, so only one position's logits
// per dtype are held at once whatever the vocabulary and text size. Throws
// kvscope::Error on a dtype the forward pass does not support, a context
// above the model's, or fewer than 2 tokens; KvAccuracyCancelled when
// cancelled.
KvAccuracyReport measure_kv_accuracy(const Model& model, std::span<const TokenId> tokens,
                                     const KvAccuracyOptions& options);

} // namespace kvscope

// The backend boundary: the forward pass over a batch, on the CPU (Runner)
// or on a CUDA device (CudaRunner, in builds with CUDA). Scheduling, block
// allocation, prefix caching and preemption stay on the host and are shared.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/backend.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/model/model_config.h"

namespace kvscope {

class Model;

// One sequence's share of a forward step: `tokens` at positions
// [start, start + tokens.size()). A prefill chunk has several tokens, a
// decode step one. Their KV slots must already be allocated in the
// KvCacheManager (allocate / append), and positions before `start` written.
struct SeqChunk {
    SeqId seq = 0;
    std::span<const TokenId> tokens;
    std::uint32_t start = 0;
    bool want_logits = true; // logits of the chunk's last token
    // Logits of every token of the chunk, in order (prompt log-probabilities),
    // whatever want_logits says.
    bool all_logits = false;

    // The rows of logits the forward pass returns for this chunk.
    std::size_t logit_rows() const { return all_logits ? tokens.size() : want_logits ? 1 : 0; }
};

// Throws kvscope::Error when the chunk is empty or its positions are not
// allocated in the KV cache.
void check_chunk(const SeqChunk& chunk, const KvCacheManager& kv);

class ForwardPass {
public:
    virtual ~ForwardPass() = default;
    // Each chunk's SeqChunk::logit_rows() rows of logits, vocab_size floats
    // each, in batch order (and token order within a chunk), into `logits`
    // (resized to fit). The KV cache's pool must live where this pass
    // computes (kv_memory(backend)). A caller that
    // steps repeatedly passes the same vector: a fresh one per step costs
    // an allocation, and page faults, of vocab_size floats per sequence.
    // Throws kvscope::Error only: a kernel's refusal (std::invalid_argument)
    // or any other std::exception of a backend arrives translated, so that
    // the engine can pin it on the request whose chunk caused it.
    void forward(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits);
    // The same, into a new vector.
    std::vector<float> forward(std::span<const SeqChunk> batch, KvCacheManager& kv) {
        std::vector<float> logits;
        forward(batch, kv, logits);
        return logits;
    }
    virtual const ModelConfig& config() const = 0;
    // Seconds the last forward() spent in mixture-of-experts FFNs (router
    // and experts); 0 for a dense model or a backend that does not measure it.
    virtual double last_expert_seconds() const { return 0; }

protected:
    // The backend's pass; may throw anything forward() translates.
    virtual void forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) = 0;
};

// Where a backend keeps the KV pool.
MemoryPlace kv_memory(Backend resolved);

// The backend that runs `requested` for this model and KV layout:
// resolve_backend on the detected device, except that Auto stays on the CPU
// (and logs why) when the CUDA forward pass cannot run this configuration
// yet. Throws kvscope::Error when cuda is asked for and cannot run.
Backend choose_backend(Backend requested, const ModelConfig& config, const KvLayout& layout);

// The forward pass of `resolved` (Cpu or Cuda). The model must outlive it.
// `threads`: the CPU kernels' thread count for each of this pass's calls
// (0: one per core); the CUDA pass ignores it.
std::unique_ptr<ForwardPass> make_forward_pass(Backend resolved, const Model& model, const KvLayout& layout,
                                               int threads = 0);

} // namespace kvscope

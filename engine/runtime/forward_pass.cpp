#include "engine/runtime/forward_pass.h"

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"

#ifdef KVSCOPE_HAVE_CUDA
#include "engine/runtime/cuda_runner.h"
#endif

namespace kvscope {

void check_chunk(const SeqChunk& c, const KvCacheManager& kv) {
    if (c.tokens.empty())
        throw Error("a batch chunk has no tokens");
    if (c.start + c.tokens.size() > kv.num_tokens(c.seq))
        throw Error("sequence " + std::to_string(c.seq) + ": positions up to " +
                    std::to_string(c.start + c.tokens.size()) + " are not allocated in the KV cache");
}

void ForwardPass::forward(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) {
    try {
        forward_batch(batch, kv, logits);
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error("the forward pass over " + std::to_string(batch.size()) + " sequence(s) failed: " + e.what());
    }
}

MemoryPlace kv_memory(Backend resolved) { return resolved == Backend::Cuda ? MemoryPlace::Cuda : MemoryPlace::Host; }

Backend choose_backend(Backend requested, const ModelConfig& config, const KvLayout& layout) {
    if (requested == Backend::Cpu)
        return Backend::Cpu;
    const Backend resolved = resolve_backend(requested, detect_device());
#ifdef KVSCOPE_HAVE_CUDA
    if (resolved == Backend::Cuda)
        if (const std::string why = CudaRunner::unsupported(config, layout); !why.empty()) {
            if (requested == Backend::Cuda)
                throw Error("backend cuda: " + why);
            logger("engine")->info("backend auto: CPU, since {}", why);
            return Backend::Cpu;
        }
#else
    (void)config;
    (void)layout;
#endif
    return resolved;
}

std::unique_ptr<ForwardPass> make_forward_pass(Backend resolved, const Model& model, const KvLayout& layout,
                                               int threads) {
    if (resolved == Backend::Cuda) {
#ifdef KVSCOPE_HAVE_CUDA
        auto pass = std::make_unique<CudaRunner>(model.config(), model.weights(), layout);
        logger("engine")->info("CUDA forward pass: weights take {:.1f} MiB of VRAM",
                               static_cast<double>(pass->weight_bytes()) / (1 << 20));
        return pass;
#else
        throw Error("backend cuda: built without CUDA (-DKVSCOPE_CUDA=ON)");
#endif
    }
    if (resolved != Backend::Cpu)
        throw Error("make_forward_pass needs a resolved backend (cpu or cuda), got " + std::string(to_string(resolved)));
    return std::make_unique<Runner>(model.config(), model.cpu_weights(threads), layout, threads);
}

} // namespace kvscope

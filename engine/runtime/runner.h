#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/model/model_config.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/model_weights.h"
#include "kernels/cpu/paged_attention.h"

namespace kvscope {

// The CPU forward pass of a LLaMA-family decoder over a batch of sequences of
// different lengths, reading and writing K/V through the paged cache:
//   embed -> per layer [RMSNorm -> Q,K,V (+bias) -> RoPE -> write K,V to
//   their slots, quantized to the KV dtype -> paged attention -> output proj -> residual -> RMSNorm ->
//   SwiGLU FFN -> residual] -> RMSNorm -> logits
class Runner : public ForwardPass {
public:
    // Throws kvscope::Error when the model needs something this runner does
    // not do yet (RoPE scaling, frequency factors) or the KV layout does not
    // match the model. `threads`: each kernel call's thread count (0: one
    // per core), this runner's own whatever other runners use.
    Runner(const ModelConfig& config, const ModelWeights& weights, const KvLayout& layout, int threads = 0);

    const ModelConfig& config() const override { return config_; }
    int threads() const { return threads_; } // resolved: at least 1

protected:
    void forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) override;

private:
    void embed(std::span<const SeqChunk> batch);
    void attention_block(const LayerWeights& w, std::uint32_t layer, std::span<const SeqChunk> batch,
                         KvCacheManager& kv);
    void ffn_block(const LayerWeights& w);
    void logits(std::span<const SeqChunk> batch, std::vector<float>& out);

    const ModelConfig& config_;
    const ModelWeights& weights_;
    KvLayout layout_;
    int threads_;
    std::size_t n_ = 0; // tokens in the current step
    // Activations, n_ rows each: residual stream, normed input, q, k, v,
    // attention output, FFN gate/up, projection output.
    std::vector<float> x_, xn_, q_, k_, v_, att_, gate_, up_, proj_;
    std::vector<float> last_rows_; // the residual rows whose logits are wanted
    std::vector<std::uint32_t> positions_;
    std::vector<float> rope_angles_; // each position's RoPE cos/sin, head_dim floats, for every layer
    std::vector<float> scratch_;
    std::vector<kernels::cpu::DecodeSeq> decode_seqs_; // a layer's decode steps, for one batch call
};

} // namespace kvscope

#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "engine/model/model_config.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/model_weights.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/rope.h"

namespace kvscope {

// The CPU forward pass of a LLaMA-family decoder over a batch of sequences of
// different lengths, reading and writing K/V through the paged cache:
//   embed (x scale) -> per layer [RMSNorm -> Q,K,V (+bias) (-> per-head
//   QK-norm) -> RoPE (the layer's kind, or none) -> write K,V to their
//   slots, quantized to the KV dtype -> paged attention (the layer's window,
//   scale, soft-cap, sinks) -> output proj (+bias) (-> post-norm) ->
//   residual -> RMSNorm -> SwiGLU or GeGLU FFN, or a mixture of experts
//   (-> post-norm) -> residual] -> RMSNorm -> logits (-> soft-cap)
// The parts in parentheses are the model's features (ModelConfig; which
// family has which: engine/model/model_families.h).
class Runner : public ForwardPass {
public:
    // Throws kvscope::Error when the model needs something this runner does
    // not do yet (RoPE scaling other than linear) or the KV layout does not
    // match the model. `threads`: each kernel call's thread count (0: one
    // per core), this runner's own whatever other runners use.
    Runner(const ModelConfig& config, const ModelWeights& weights, const KvLayout& layout, int threads = 0);

    const ModelConfig& config() const override { return config_; }
    int threads() const { return threads_; } // resolved: at least 1
    double last_expert_seconds() const override { return expert_seconds_; }

protected:
    void forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) override;

private:
    // A RoPE table for the step's positions, shared by the layers that
    // rotate with the same base and scaling.
    struct RopeKind {
        double theta;
        bool scaled;
        std::vector<float> angles; // rope_dims floats per token (cpu::rope_angles)
    };

    void rope_tables();
    kernels::cpu::RopeFrequencies rope_frequencies(const LayerAttention& layer) const;
    void embed(std::span<const SeqChunk> batch);
    void rotate(std::uint32_t layer);
    kernels::cpu::AttentionOptions attention_options(std::uint32_t layer) const;
    void attention_block(const LayerWeights& w, std::uint32_t layer, std::span<const SeqChunk> batch,
                         KvCacheManager& kv);
    void ffn_block(const LayerWeights& w);
    void moe_block(const LayerWeights& w, std::uint32_t layer);
    void route(const ExpertWeights& x);
    void run_expert(const ExpertWeights& x, std::uint32_t layer, std::uint32_t expert, std::size_t first,
                    std::size_t count);
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
    std::vector<RopeKind> rope_kinds_;
    std::vector<int> layer_rope_; // each layer's index into rope_kinds_, -1: no RoPE
    std::vector<float> scratch_;
    // A MoE layer's routing: the router's logits (n_ x experts), then the
    // step's (token row, weight) pairs grouped by expert: expert e's are
    // routed_[expert_first_[e] .. expert_first_[e + 1]).
    struct Routed {
        std::uint32_t row;
        float weight;
    };
    std::vector<float> router_logits_;
    std::vector<std::uint32_t> picked_, top_; // each row's k experts, in rows; one row's, ranked
    std::vector<float> picked_weights_;       // their weights, as picked_
    std::vector<Routed> routed_;
    std::vector<std::size_t> expert_first_, next_routed_;
    std::vector<float> expert_in_, expert_gate_, expert_up_, expert_out_; // one expert's rows
    double expert_seconds_ = 0; // this step's time in MoE FFNs (router and experts)
    std::vector<kernels::cpu::DecodeSeq> decode_seqs_; // a layer's decode steps, for one batch call
};

} // namespace kvscope

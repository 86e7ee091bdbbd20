// The forward pass on a CUDA device (builds with CUDA only): the same steps
// as the CPU Runner, with the weights, the activations and the KV pool in
// device memory, through kernels/cuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/model/model_config.h"
#include "engine/runtime/cuda_weights.h"
#include "engine/runtime/forward_pass.h"
#include "kernels/cuda/device_buffer.h"

namespace kvscope {

class CudaRunner : public ForwardPass {
public:
    // Why this model and layout cannot run here yet; empty when they can.
    static std::string unsupported(const ModelConfig& config, const KvLayout& layout);

    // Uploads the weights. Throws kvscope::Error when unsupported() says
    // why or the device cannot hold them.
    CudaRunner(const ModelConfig& config, const ModelWeights& weights, const KvLayout& layout);

    const ModelConfig& config() const override { return config_; }
    std::size_t weight_bytes() const { return weights_.bytes(); }

protected:
    // The KV pool must be device memory (MemoryPlace::Cuda). Throws
    // kvscope::Error for a bad batch and for a CUDA failure.
    void forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) override;

private:
    // The step's host-side metadata, checked, then uploaded in one copy.
    struct StepPlan {
        std::vector<std::uint32_t> tokens, positions, slots, query_seq, tables;
        std::uint32_t n_seqs = 0;
        std::uint32_t table_stride = 0;
        std::uint32_t max_context = 0;
        std::vector<std::uint32_t> logit_rows; // rows whose logits are returned
    };
    static const ModelConfig& checked(const ModelConfig& config, const KvLayout& layout);
    StepPlan plan(std::span<const SeqChunk> batch, KvCacheManager& kv) const;
    void run(const StepPlan& p, KvCacheManager& kv, std::vector<float>& logits);
    void attention_block(const DeviceLayer& w, std::uint32_t layer, const StepPlan& p, KvCacheManager& kv);
    void ffn_block(const DeviceLayer& w);
    void logits(const StepPlan& p, std::vector<float>& out);
    void reserve(std::uint32_t n_tokens);

    ModelConfig config_;
    KvLayout layout_;
    CudaWeights weights_;
    std::uint32_t n_ = 0;        // tokens in the current step
    std::uint32_t capacity_ = 0; // tokens the activation buffers hold
    kernels::cuda::DeviceBuffer x_, xn_, q_, k_, v_, att_, gate_, up_, proj_;
    kernels::cuda::DeviceBuffer meta_, workspace_, fixed_scales_;
    // Device views into meta_, set by run().
    const std::uint32_t *tokens_ = nullptr, *positions_ = nullptr, *slots_ = nullptr, *query_seq_ = nullptr,
                        *tables_ = nullptr;
};

} // namespace kvscope

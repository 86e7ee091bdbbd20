// A model's weights in device memory, for the CUDA forward pass. Compiled
// only in builds with CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/runtime/model_weights.h"
#include "kernels/cuda/dense_ops.h"
#include "kernels/cuda/device_buffer.h"

namespace kvscope {

struct DeviceMatrix {
    kernels::cuda::DeviceBuffer data;
    kernels::cuda::DenseType type = kernels::cuda::DenseType::F32;
    std::uint32_t rows = 0;
    std::uint32_t cols = 0;
};

struct DeviceLayer {
    kernels::cuda::DeviceBuffer attn_norm, ffn_norm;
    kernels::cuda::DeviceBuffer q_bias, k_bias, v_bias; // empty without biases
    DeviceMatrix q, k, v, o, gate, up, down;
};

// Uploaded once at load. F32 matrices stay f32 (their values exactly as on
// the CPU); every other type is dequantized once, on the host, and stored
// as f16: quantized codes and bf16 round to f16 here, which the CPU path
// does not do, so logits differ from the CPU's by that rounding.
class CudaWeights {
public:
    // Throws kvscope::Error when the device cannot hold them.
    CudaWeights(const ModelConfig& config, const ModelWeights& weights);

    DeviceMatrix token_embd;
    DeviceMatrix output_own; // empty when the embeddings are tied
    kernels::cuda::DeviceBuffer output_norm;
    std::vector<DeviceLayer> layers;

    const DeviceMatrix& output() const { return tied_ ? token_embd : output_own; }
    // VRAM the weights take, in bytes.
    std::size_t bytes() const { return bytes_; }

private:
    DeviceMatrix upload(const WeightMatrix& m);
    kernels::cuda::DeviceBuffer upload(const float* values, std::size_t count);

    bool tied_ = false;
    std::size_t bytes_ = 0;
};

} // namespace kvscope

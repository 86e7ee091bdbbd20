#include "engine/runtime/cuda_weights.h"

#include <algorithm>
#include <exception>
#include <string>

#include "engine/core/error.h"
#include "engine/model/ggml_type.h"
#include "kernels/cpu/float16_encode.h"

namespace kvscope {
namespace cuda = kernels::cuda;
namespace {

// Rows dequantized per host-side batch: bounds the staging memory of a
// large matrix (an embedding of 128k x 4096) to a few MiB.
constexpr std::size_t kRowsPerUpload = 256;

} // namespace

CudaWeights::CudaWeights(const ModelConfig& config, const ModelWeights& weights) {
    try {
        token_embd = upload(weights.token_embd);
        tied_ = weights.output.data == weights.token_embd.data;
        if (!tied_)
            output_own = upload(weights.output);
        output_norm = upload(weights.output_norm, config.embedding_dim);
        for (const LayerWeights& w : weights.layers) {
            DeviceLayer d;
            d.attn_norm = upload(w.attn_norm, config.embedding_dim);
            d.ffn_norm = upload(w.ffn_norm, config.embedding_dim);
            d.q_bias = upload(w.q_bias, config.q_dim());
            d.k_bias = upload(w.k_bias, config.kv_dim());
            d.v_bias = upload(w.v_bias, config.kv_dim());
            d.q = upload(w.q);
            d.k = upload(w.k);
            d.v = upload(w.v);
            d.o = upload(w.o);
            d.gate = upload(w.gate);
            d.up = upload(w.up);
            d.down = upload(w.down);
            layers.push_back(std::move(d));
        }
    } catch (const cuda::CudaError& e) {
        throw Error("cannot load the model's weights onto the GPU: " + std::string(e.what()));
    }
}

DeviceMatrix CudaWeights::upload(const WeightMatrix& m) {
    DeviceMatrix d;
    d.rows = static_cast<std::uint32_t>(m.rows);
    d.cols = static_cast<std::uint32_t>(m.cols);
    const auto* src = static_cast<const std::byte*>(m.data);
    if (m.type == kernels::cpu::WeightType::F32) {
        d.type = cuda::DenseType::F32;
        d.data = cuda::DeviceBuffer(m.rows * m.cols * sizeof(float));
        d.data.upload(src, d.data.size());
    } else {
        d.type = cuda::DenseType::F16;
        d.data = cuda::DeviceBuffer(m.rows * m.cols * sizeof(std::uint16_t));
        std::vector<float> row(m.cols);
        std::vector<std::uint16_t> staged;
        for (std::size_t r0 = 0; r0 < m.rows; r0 += kRowsPerUpload) {
            const std::size_t n = std::min(kRowsPerUpload, m.rows - r0);
            staged.resize(n * m.cols);
            for (std::size_t r = 0; r < n; ++r) {
                dequantize_row(static_cast<GgmlType>(m.type), src + (r0 + r) * m.row_bytes, row.data(), m.cols);
                std::transform(row.begin(), row.end(), staged.begin() + static_cast<std::ptrdiff_t>(r * m.cols),
                               kernels::cpu::f32_to_f16);
            }
            d.data.upload(staged.data(), staged.size() * sizeof(std::uint16_t), r0 * m.cols * sizeof(std::uint16_t));
        }
    }
    bytes_ += d.data.size();
    return d;
}

cuda::DeviceBuffer CudaWeights::upload(const float* values, std::size_t count) {
    if (!values)
        return {};
    cuda::DeviceBuffer buffer(count * sizeof(float));
    buffer.upload(values, buffer.size());
    bytes_ += buffer.size();
    return buffer;
}

} // namespace kvscope

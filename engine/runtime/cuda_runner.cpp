#include "engine/runtime/cuda_runner.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernels/cuda/kv_write.h"
#include "kernels/cuda/layer_ops.h"
#include "kernels/cuda/paged_attention.h"

namespace kvscope {
namespace cuda = kernels::cuda;
namespace {

// Grows `buffer` to hold at least `bytes` (its contents are not kept).
void ensure(cuda::DeviceBuffer& buffer, std::size_t bytes) {
    if (buffer.size() < bytes)
        buffer = cuda::DeviceBuffer(bytes);
}

void matmul(const DeviceMatrix& w, const cuda::DeviceBuffer& in, std::uint32_t n, cuda::DeviceBuffer& out) {
    cuda::matmul(w.data.data(), w.type, w.rows, w.cols, in.as<float>(), n, out.as<float>());
}

void add_bias(cuda::DeviceBuffer& rows, const cuda::DeviceBuffer& bias, std::uint32_t n, std::uint32_t width) {
    if (bias.size() > 0)
        cuda::add_bias(rows.as<float>(), bias.as<float>(), n, width);
}

// The first feature of model_families.h the CUDA kernels lack ("sliding
// windows are"), or empty for a plain llama/qwen2 decoder.
std::string beyond_llama(const ModelConfig& c) {
    if (c.is_moe())
        return "mixture of experts is";
    if (c.attn_sinks || c.output_bias)
        return "attention sinks and output biases are";
    if (c.has_windows())
        return "sliding windows are";
    if (c.qk_norm)
        return "QK-norm is";
    if (c.post_norms)
        return "post-sublayer norms are";
    if (c.ffn_activation != FfnActivation::SiLU)
        return "GELU FFN is";
    if (c.fused_qkv || c.fused_gate_up)
        return "fused QKV / gate-up matrices are";
    if (c.attn_softcap > 0 || c.final_softcap > 0)
        return "soft-capping is";
    if (c.embedding_scale != 1.0 || c.attention_scale != 0.0)
        return "embedding or attention scaling is";
    if (c.rope_dims != c.head_dim)
        return "partial rotary embedding is";
    for (const LayerAttention& l : c.layers)
        if (!l.rope || l.rope_theta != c.rope_theta)
            return "per-layer RoPE is";
    return {};
}

} // namespace

std::string CudaRunner::unsupported(const ModelConfig& config, const KvLayout& layout) {
    if (const std::string feature = beyond_llama(config); !feature.empty())
        return config.architecture + "'s " + feature + " not on CUDA yet";
    if (config.rope_scaling && config.rope_scaling->factor != 1.0)
        return "RoPE scaling '" + config.rope_scaling->type + "' is not supported yet";
    if (config.rope_freq_factors)
        return "RoPE frequency factors (rope_freqs.weight) are not supported yet";
    if (config.head_dim % 8 != 0 || config.head_dim > 256)
        return "head dim " + std::to_string(config.head_dim) + " (the CUDA kernels need a multiple of 8, at most 256)";
    if (config.embedding_dim % 2 != 0 || config.q_dim() % 2 != 0 || config.ffn_dim % 2 != 0)
        return "odd matrix widths (the CUDA matrix product reads pairs)";
    if (layout.num_groups() > 1)
        return "a KV cache of " + std::to_string(layout.num_groups()) + " groups is not on CUDA yet";
    if (layout.tail_bytes() > 0)
        return "the " + std::string(to_string(layout.dtype())) +
               " KV cache keeps per-sequence tails the CUDA backend does not hold on the device yet";
    return {};
}

CudaRunner::CudaRunner(const ModelConfig& config, const ModelWeights& weights, const KvLayout& layout)
    : config_(checked(config, layout)), layout_(layout), weights_(config, weights) {}

// Before any upload: a model this pass cannot run costs no VRAM.
const ModelConfig& CudaRunner::checked(const ModelConfig& config, const KvLayout& layout) {
    if (const std::string why = unsupported(config, layout); !why.empty())
        throw Error("backend cuda: " + why);
    const KvGeometry& g = layout.geometry();
    if (g.n_layers != config.n_layers || g.n_kv_heads != config.n_kv_heads || g.head_dim != config.head_dim)
        throw Error("the KV layout does not match the model's layers, KV heads or head dim");
    return config;
}

void CudaRunner::forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) {
    if (kv.pool().place() != MemoryPlace::Cuda)
        throw Error("the CUDA forward pass needs the KV pool in device memory");
    try {
        run(plan(batch, kv), kv, logits);
    } catch (const cuda::CudaError& e) {
        throw Error(std::string("CUDA: ") + e.what());
    } catch (const std::invalid_argument& e) {
        throw Error(std::string("CUDA kernels refused the step: ") + e.what());
    }
}

CudaRunner::StepPlan CudaRunner::plan(std::span<const SeqChunk> batch, KvCacheManager& kv) const {
    StepPlan p;
    for (const SeqChunk& c : batch) {
        check_chunk(c, kv);
        p.table_stride = std::max(p.table_stride, static_cast<std::uint32_t>(kv.block_table(c.seq, 0).size()));
    }
    const std::uint32_t bs = layout_.block_size();
    p.n_seqs = static_cast<std::uint32_t>(batch.size());
    p.tables.assign(batch.size() * p.table_stride, 0);
    for (std::uint32_t s = 0; s < batch.size(); ++s) {
        const SeqChunk& c = batch[s];
        // One KV cache group: models with windows do not load here (beyond_llama).
        const std::span<const BlockId> table = kv.block_table(c.seq, 0);
        std::copy(table.begin(), table.end(), p.tables.begin() + static_cast<std::ptrdiff_t>(s * p.table_stride));
        for (std::uint32_t i = 0; i < c.tokens.size(); ++i) {
            const TokenId t = c.tokens[i];
            if (t < 0 || static_cast<std::uint32_t>(t) >= weights_.token_embd.rows)
                throw Error("token id " + std::to_string(t) + " is outside the vocabulary of " +
                            std::to_string(weights_.token_embd.rows));
            const std::uint32_t pos = c.start + i;
            const SlotRef slot = kv.slot_of(c.seq, 0, pos);
            p.tokens.push_back(static_cast<std::uint32_t>(t));
            p.positions.push_back(pos);
            p.slots.push_back(slot.block * bs + slot.slot);
            p.query_seq.push_back(s);
            p.max_context = std::max(p.max_context, pos + 1);
        }
        const auto end = static_cast<std::uint32_t>(p.tokens.size());
        for (auto row = end - static_cast<std::uint32_t>(c.logit_rows()); row < end; ++row)
            p.logit_rows.push_back(row);
    }
    // Every layer reads through the same tables: checked once, before any upload.
    const kernels::cpu::PagedKv layer0 =
        paged_kv_view(layout_, 0, kv.block_data(0), kv.config().num_blocks, kv.fixed_scales());
    cuda::check_attention_batch(layer0, p.query_seq, p.positions, p.max_context, p.tables, p.table_stride, p.n_seqs);
    return p;
}

void CudaRunner::reserve(std::uint32_t n_tokens) {
    if (n_tokens <= capacity_)
        return;
    const std::size_t row = sizeof(float) * n_tokens;
    x_ = cuda::DeviceBuffer(row * config_.embedding_dim);
    xn_ = cuda::DeviceBuffer(row * config_.embedding_dim);
    q_ = cuda::DeviceBuffer(row * config_.q_dim());
    k_ = cuda::DeviceBuffer(row * config_.kv_dim());
    v_ = cuda::DeviceBuffer(row * config_.kv_dim());
    att_ = cuda::DeviceBuffer(row * config_.q_dim());
    gate_ = cuda::DeviceBuffer(row * config_.ffn_dim);
    up_ = cuda::DeviceBuffer(row * config_.ffn_dim);
    proj_ = cuda::DeviceBuffer(row * std::max<std::size_t>(config_.embedding_dim, config_.vocab_size));
    capacity_ = n_tokens;
}

void CudaRunner::run(const StepPlan& p, KvCacheManager& kv, std::vector<float>& logits) {
    n_ = static_cast<std::uint32_t>(p.tokens.size());
    reserve(n_);
    if (kv.fixed_scales() && fixed_scales_.size() == 0) // fp8: the pool's constant scales, once
        fixed_scales_ = cuda::upload_vector(
            std::vector<float>(kv.fixed_scales(), kv.fixed_scales() + layout_.fixed_bytes() / sizeof(float)));

    // One upload for all of the step's metadata; the device views point into it.
    std::vector<std::uint32_t> meta;
    std::vector<const std::uint32_t*> views;
    std::vector<std::size_t> offsets;
    for (const auto* part : {&p.tokens, &p.positions, &p.slots, &p.query_seq, &p.tables}) {
        offsets.push_back(meta.size());
        meta.insert(meta.end(), part->begin(), part->end());
    }
    ensure(meta_, meta.size() * sizeof(std::uint32_t));
    meta_.upload(meta.data(), meta.size() * sizeof(std::uint32_t));
    const std::uint32_t* base = meta_.as<std::uint32_t>();
    tokens_ = base + offsets[0];
    positions_ = base + offsets[1];
    slots_ = base + offsets[2];
    query_seq_ = base + offsets[3];
    tables_ = base + offsets[4];

    const DeviceMatrix& e = weights_.token_embd;
    cuda::embedding_rows(e.data.data(), e.type == cuda::DenseType::F16 ? cuda::EmbeddingType::F16
                                                                        : cuda::EmbeddingType::F32,
                         e.rows, e.cols, tokens_, n_, x_.as<float>());
    for (std::uint32_t l = 0; l < config_.n_layers; ++l) {
        attention_block(weights_.layers[l], l, p, kv);
        ffn_block(weights_.layers[l]);
    }
    this->logits(p, logits);
}

void CudaRunner::attention_block(const DeviceLayer& w, std::uint32_t layer, const StepPlan& p, KvCacheManager& kv) {
    const auto dim = static_cast<std::uint32_t>(config_.embedding_dim);
    const auto hd = static_cast<std::uint32_t>(config_.head_dim);
    const auto q_dim = static_cast<std::uint32_t>(config_.q_dim());
    const auto kv_dim = static_cast<std::uint32_t>(config_.kv_dim());
    cuda::rms_norm(x_.as<float>(), w.attn_norm.as<float>(), n_, dim, static_cast<float>(config_.norm_eps),
                   xn_.as<float>());
    matmul(w.q, xn_, n_, q_);
    matmul(w.k, xn_, n_, k_);
    matmul(w.v, xn_, n_, v_);
    add_bias(q_, w.q_bias, n_, q_dim);
    add_bias(k_, w.k_bias, n_, kv_dim);
    add_bias(v_, w.v_bias, n_, kv_dim);
    const auto style = config_.rope_style == RopeStyle::NeoXHalves ? kernels::cpu::RopeStyle::Halves
                                                                   : kernels::cpu::RopeStyle::AdjacentPairs;
    const auto theta = static_cast<float>(config_.rope_theta);
    cuda::rope(q_.as<float>(), positions_, n_, config_.n_heads, hd, hd, theta, style);
    cuda::rope(k_.as<float>(), positions_, n_, config_.n_kv_heads, hd, hd, theta, style);

    const kernels::cpu::PagedKv pkv = paged_kv_view(layout_, layer, kv.block_data(0), kv.config().num_blocks,
                                                    fixed_scales_.size() ? fixed_scales_.as<float>() : nullptr);
    cuda::KvWriteBatch write;
    write.k = k_.as<float>();
    write.v = v_.as<float>();
    write.slots = slots_;
    write.n_tokens = n_;
    cuda::write_kv(pkv, write);

    cuda::AttentionBatch a;
    a.q = q_.as<float>();
    a.out = att_.as<float>();
    a.n_queries = n_;
    a.n_heads = config_.n_heads;
    a.seq = query_seq_;
    a.position = positions_;
    a.max_context = p.max_context;
    a.block_tables = tables_;
    a.table_stride = p.table_stride;
    const std::size_t ws = cuda::attention_workspace_bytes(pkv, a);
    ensure(workspace_, ws);
    cuda::paged_attention(pkv, a, workspace_.data(), workspace_.size());

    matmul(w.o, att_, n_, proj_);
    cuda::add_in_place(x_.as<float>(), proj_.as<float>(), static_cast<std::size_t>(n_) * dim);
}

void CudaRunner::ffn_block(const DeviceLayer& w) {
    const auto dim = static_cast<std::uint32_t>(config_.embedding_dim);
    cuda::rms_norm(x_.as<float>(), w.ffn_norm.as<float>(), n_, dim, static_cast<float>(config_.norm_eps),
                   xn_.as<float>());
    matmul(w.gate, xn_, n_, gate_);
    matmul(w.up, xn_, n_, up_);
    cuda::silu_mul(gate_.as<float>(), up_.as<float>(), gate_.as<float>(), static_cast<std::size_t>(n_) * config_.ffn_dim);
    matmul(w.down, gate_, n_, proj_);
    cuda::add_in_place(x_.as<float>(), proj_.as<float>(), static_cast<std::size_t>(n_) * dim);
}

void CudaRunner::logits(const StepPlan& p, std::vector<float>& host) {
    if (p.logit_rows.empty()) {
        host.clear();
        return;
    }
    const std::size_t dim = config_.embedding_dim;
    const auto rows = static_cast<std::uint32_t>(p.logit_rows.size());
    // The wanted rows, gathered at the front of xn_ (one copy per run of
    // consecutive rows: a chunk's prompt log-probabilities ask for all of
    // its rows), normed, then projected.
    for (std::uint32_t i = 0, run = 0; i < rows; i += run) {
        run = 1;
        while (i + run < rows && p.logit_rows[i + run] == p.logit_rows[i] + run)
            ++run;
        cuda::copy_bytes_async(xn_.as<float>() + i * dim, x_.as<float>() + p.logit_rows[i] * dim,
                               run * dim * sizeof(float));
    }
    cuda::rms_norm(xn_.as<float>(), weights_.output_norm.as<float>(), rows, static_cast<std::uint32_t>(dim),
                   static_cast<float>(config_.norm_eps), xn_.as<float>());
    const DeviceMatrix& out = weights_.output();
    cuda::matmul(out.data.data(), out.type, out.rows, out.cols, xn_.as<float>(), rows, proj_.as<float>());
    host.resize(static_cast<std::size_t>(rows) * out.rows);
    cuda::copy_bytes(host.data(), proj_.data(), host.size() * sizeof(float));
}

} // namespace kvscope

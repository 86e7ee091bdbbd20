#include "engine/runtime/runner.h"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/ggml_type.h"
#include "engine/runtime/expert_packs.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rope.h"

namespace kvscope {
namespace cpu = kernels::cpu;
namespace {

void matmul(const WeightMatrix& w, const std::vector<float>& in, std::size_t n, std::vector<float>& out,
            int threads) {
    out.resize(n * w.rows);
    const cpu::MatmulJob job{w.type, w.data, w.rows, out.data(), w.packed};
    cpu::matmuls({&job, 1}, w.cols, in.data(), n, threads);
}

struct Projection {
    const WeightMatrix& w;
    std::vector<float>& out;
};

// out = in x W for several matrices reading the same input (Q, K and V; FFN
// gate and up), handed to the kernel threads in one go: fewer
// synchronisations per step, same results.
void project(const std::vector<float>& in, std::size_t n, int threads,
             std::initializer_list<Projection> projections) {
    std::vector<cpu::MatmulJob> jobs;
    for (const Projection& p : projections) {
        p.out.resize(n * p.w.rows);
        jobs.push_back({p.w.type, p.w.data, p.w.rows, p.out.data(), p.w.packed});
    }
    cpu::matmuls(jobs, projections.begin()->w.cols, in.data(), n, threads);
}

void add_bias(std::vector<float>& rows, const float* bias, std::size_t width) {
    if (!bias)
        return;
    for (std::size_t i = 0; i < rows.size(); ++i)
        rows[i] += bias[i % width];
}

void rms_norm_rows(const std::vector<float>& in, const float* weight, std::size_t width, float eps,
                   std::vector<float>& out, int threads) {
    out.resize(in.size());
    cpu::rms_norm_rows(in.data(), weight, in.size() / width, width, eps, out.data(), threads);
}

// RMSNorm of each head_dim-wide head of every row, with one weight vector
// shared by the heads (Qwen3's and Gemma 3's QK-norm).
void rms_norm_heads(std::vector<float>& rows, const float* weight, std::size_t head_dim, float eps, int threads) {
    cpu::rms_norm_rows(rows.data(), weight, rows.size() / head_dim, head_dim, eps, rows.data(), threads);
}

// The FFN's gate activation in place: gate = act(gate) · up.
void activate(FfnActivation activation, std::vector<float>& gate, const std::vector<float>& up, int threads) {
    switch (activation) {
    case FfnActivation::GeluTanh:
        return cpu::gelu_mul(gate.data(), up.data(), gate.data(), gate.size(), threads);
    case FfnActivation::SwiGluClamped:
        return cpu::swiglu_clamped_mul(gate.data(), up.data(), gate.data(), gate.size(), threads);
    case FfnActivation::SiLU:
        return cpu::silu_mul(gate.data(), up.data(), gate.data(), gate.size(), threads);
    }
}

// The indices of the k largest of `values` in descending order (ties: the
// lower index first), into `top`.
void top_k(const float* values, std::uint32_t n, std::uint32_t k, std::vector<std::uint32_t>& top) {
    top.resize(n);
    for (std::uint32_t i = 0; i < n; ++i)
        top[i] = i;
    std::partial_sort(top.begin(), top.begin() + k, top.end(), [values](std::uint32_t a, std::uint32_t b) {
        return values[a] > values[b] || (values[a] == values[b] && a < b);
    });
    top.resize(k);
}

// The weights of the experts `top` picks out of a token's router logits,
// as the model's gating has them (ExpertGating).
void expert_weights(ExpertGating gating, float* logits, std::uint32_t n, std::vector<std::uint32_t>& top,
                    std::uint32_t k, float* weights) {
    if (gating == ExpertGating::TopKSoftmax) {
        top_k(logits, n, k, top);
        for (std::uint32_t i = 0; i < k; ++i)
            weights[i] = logits[top[i]];
        cpu::softmax(weights, k);
        return;
    }
    cpu::softmax(logits, n);
    top_k(logits, n, k, top);
    float sum = 0;
    for (std::uint32_t i = 0; i < k; ++i)
        sum += weights[i] = logits[top[i]];
    // llama.cpp's clamp: the smallest normal f16, so a sum of zeros cannot divide.
    sum = std::max(sum, 6.103515625e-5f);
    for (std::uint32_t i = 0; i < k; ++i)
        weights[i] /= sum;
}

void add_rows(std::vector<float>& x, const std::vector<float>& y) {
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] += y[i];
}

} // namespace

Runner::Runner(const ModelConfig& config, const ModelWeights& weights, const KvLayout& layout, int threads)
    : config_(config), weights_(weights), layout_(layout), threads_(cpu::resolve_threads(threads)) {
    if (config.rope_scaling && config.rope_scaling->factor != 1.0 && config.rope_scaling->type != "linear" &&
        config.rope_scaling->type != "yarn")
        throw Error("RoPE scaling '" + config.rope_scaling->type + "' is not supported yet");
    const KvGeometry& g = layout.geometry();
    if (g.n_layers != config.n_layers || g.n_kv_heads != config.n_kv_heads || g.head_dim != config.head_dim)
        throw Error("the KV layout does not match the model's layers, KV heads or head dim");
}

void Runner::forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) {
    n_ = 0;
    positions_.clear();
    if (kv.pool().place() != MemoryPlace::Host)
        throw Error("the CPU forward pass needs the KV pool in host memory");
    for (const SeqChunk& c : batch) {
        check_chunk(c, kv);
        for (std::size_t i = 0; i < c.tokens.size(); ++i)
            positions_.push_back(c.start + static_cast<std::uint32_t>(i));
        n_ += c.tokens.size();
    }
    rope_tables();
    embed(batch);
    expert_seconds_ = 0;
    for (std::uint32_t l = 0; l < config_.n_layers; ++l) {
        attention_block(weights_.layers[l], l, batch, kv);
        if (config_.is_moe())
            moe_block(weights_.layers[l], l);
        else
            ffn_block(weights_.layers[l]);
    }
    this->logits(batch, logits);
    if (config_.final_softcap > 0)
        cpu::softcap(logits.data(), logits.size(), static_cast<float>(config_.final_softcap));
}

// The step's cos/sin tables, one per kind of RoPE the layers use (Gemma 3:
// its window layers' base and its global layers' scaled one), each shared
// by every layer of its kind.
void Runner::rope_tables() {
    rope_kinds_.clear();
    layer_rope_.assign(config_.n_layers, -1);
    for (std::uint32_t l = 0; l < config_.n_layers; ++l) {
        const LayerAttention& a = config_.layers[l];
        if (!a.rope)
            continue;
        auto same = [&](const RopeKind& k) { return k.theta == a.rope_theta && k.scaled == a.rope_scaled; };
        auto it = std::find_if(rope_kinds_.begin(), rope_kinds_.end(), same);
        if (it == rope_kinds_.end()) {
            rope_kinds_.push_back({a.rope_theta, a.rope_scaled, {}});
            it = rope_kinds_.end() - 1;
            cpu::rope_angles(positions_.data(), positions_.size(), config_.rope_dims, rope_frequencies(a),
                             it->angles);
        }
        layer_rope_[l] = static_cast<int>(it - rope_kinds_.begin());
    }
}

cpu::RopeFrequencies Runner::rope_frequencies(const LayerAttention& a) const {
    cpu::RopeFrequencies f;
    f.theta_base = static_cast<float>(a.rope_theta);
    if (a.rope_scaled && config_.rope_scaling) {
        const RopeScaling& s = *config_.rope_scaling;
        f.freq_scale = static_cast<float>(1.0 / s.factor);
        // YaRN's ramp is over the context the model was trained with
        // (llama.cpp's n_ctx_orig_yarn: the file's, else its context).
        if (s.type == "yarn" && s.factor != 1.0)
            f.yarn = cpu::RopeYarn{static_cast<std::uint32_t>(s.original_context ? s.original_context
                                                                                  : config_.context_length),
                                   static_cast<float>(s.yarn_beta_fast), static_cast<float>(s.yarn_beta_slow),
                                   static_cast<float>(s.yarn_log_mul)};
    }
    f.factors = weights_.rope_factors;
    f.attn_factor = static_cast<float>(config_.rope_attn_factor);
    return f;
}

void Runner::embed(std::span<const SeqChunk> batch) {
    const std::size_t dim = config_.embedding_dim;
    const WeightMatrix& e = weights_.token_embd;
    x_.resize(n_ * dim);
    std::size_t row = 0;
    for (const SeqChunk& c : batch)
        for (TokenId t : c.tokens) {
            if (t < 0 || static_cast<std::size_t>(t) >= e.rows)
                throw Error("token id " + std::to_string(t) + " is outside the vocabulary of " +
                            std::to_string(e.rows));
            const auto* src = static_cast<const std::byte*>(e.data) + static_cast<std::size_t>(t) * e.row_bytes;
            dequantize_row(static_cast<GgmlType>(e.type), src, x_.data() + row++ * dim, dim);
        }
    if (config_.embedding_scale != 1.0) {
        const auto scale = static_cast<float>(config_.embedding_scale);
        for (float& v : x_)
            v *= scale;
    }
}

void Runner::attention_block(const LayerWeights& w, std::uint32_t layer, std::span<const SeqChunk> batch,
                             KvCacheManager& kv) {
    const std::size_t dim = config_.embedding_dim, hd = config_.head_dim;
    const std::size_t q_dim = config_.q_dim(), kv_dim = config_.kv_dim();
    const auto eps = static_cast<float>(config_.norm_eps);
    rms_norm_rows(x_, w.attn_norm, dim, eps, xn_, threads_);
    project(xn_, n_, threads_, {{w.q, q_}, {w.k, k_}, {w.v, v_}});
    add_bias(q_, w.q_bias, q_dim);
    add_bias(k_, w.k_bias, kv_dim);
    add_bias(v_, w.v_bias, kv_dim);
    if (w.q_norm) {
        rms_norm_heads(q_, w.q_norm, hd, eps, threads_);
        rms_norm_heads(k_, w.k_norm, hd, eps, threads_);
    }
    rotate(layer);
    const cpu::AttentionOptions options = attention_options(layer);
    const cpu::PagedKv pkv = paged_kv_view(layout_, layer, kv.block_data(0), kv.config().num_blocks, kv.fixed_scales());
    att_.resize(n_ * q_dim);
    std::uint32_t max_ctx = 0;
    for (const SeqChunk& c : batch)
        max_ctx = std::max(max_ctx, static_cast<std::uint32_t>(c.start + c.tokens.size()));
    scratch_.resize(cpu::paged_attention_scratch_floats(max_ctx, config_.head_dim, threads_));
    // Each chunk's K/V into the cache, then its attention: a prompt chunk's
    // at once (tiled prompt kernel), the decode steps all in one batch call
    // after the loop: one hand-off to the threads per layer for decode
    // attention, not one per sequence.
    // The layer's K/V live in its KV cache group's blocks (kv_groups.h).
    const std::size_t group = kv.layout().groups().group_of(layer);
    decode_seqs_.clear();
    std::size_t row = 0;
    for (const SeqChunk& c : batch) {
        std::byte* tail = kv.tail_data(c.seq); // KIVI: the partial last block
        const auto n_q = static_cast<std::uint32_t>(c.tokens.size());
        const auto ctx = static_cast<std::uint32_t>(c.start + n_q);
        for (std::size_t r = row; r < row + n_q; ++r) {
            const SlotRef slot = kv.slot_of(c.seq, group, positions_[r]);
            cpu::write_kv(pkv, slot.block, slot.slot, k_.data() + r * kv_dim, v_.data() + r * kv_dim, tail);
        }
        const std::span<const BlockId> table = kv.block_table(c.seq, group);
        if (n_q == 1)
            decode_seqs_.push_back({table, ctx, q_.data() + row * q_dim, att_.data() + row * q_dim, tail});
        else
            cpu::paged_attention(pkv, table, ctx, q_.data() + row * q_dim, n_q, config_.n_heads,
                                 att_.data() + row * q_dim, scratch_, threads_, tail, options);
        row += n_q;
    }
    cpu::paged_attention_decode_batch(pkv, decode_seqs_, config_.n_heads, scratch_, threads_, options);
    matmul(w.o, att_, n_, proj_, threads_);
    add_bias(proj_, w.o_bias, dim);
    if (w.attn_post_norm)
        rms_norm_rows(proj_, w.attn_post_norm, dim, eps, proj_, threads_);
    add_rows(x_, proj_);
}

// RoPE on this step's q and k rows, with the layer's kind of angles; a
// layer without RoPE (SmolLM3's every fourth) leaves them as they are.
void Runner::rotate(std::uint32_t layer) {
    if (layer_rope_[layer] < 0)
        return;
    const std::vector<float>& angles = rope_kinds_[static_cast<std::size_t>(layer_rope_[layer])].angles;
    const std::size_t hd = config_.head_dim, rot = config_.rope_dims;
    const std::size_t q_dim = config_.q_dim(), kv_dim = config_.kv_dim();
    const auto style = config_.rope_style == RopeStyle::NeoXHalves ? cpu::RopeStyle::Halves
                                                                   : cpu::RopeStyle::AdjacentPairs;
    for (std::size_t r = 0; r < n_; ++r) {
        const float* cos_sin = angles.data() + r * rot;
        cpu::rope_rotate(q_.data() + r * q_dim, config_.n_heads, hd, rot, cos_sin, style);
        cpu::rope_rotate(k_.data() + r * kv_dim, config_.n_kv_heads, hd, rot, cos_sin, style);
    }
}

cpu::AttentionOptions Runner::attention_options(std::uint32_t layer) const {
    return {static_cast<float>(config_.attention_scale), static_cast<float>(config_.attn_softcap),
            config_.layers[layer].window, weights_.layers[layer].sinks};
}

void Runner::ffn_block(const LayerWeights& w) {
    const auto eps = static_cast<float>(config_.norm_eps);
    rms_norm_rows(x_, w.ffn_norm, config_.embedding_dim, eps, xn_, threads_);
    project(xn_, n_, threads_, {{w.gate, gate_}, {w.up, up_}});
    activate(config_.ffn_activation, gate_, up_, threads_);
    matmul(w.down, gate_, n_, proj_, threads_);
    if (w.ffn_post_norm)
        rms_norm_rows(proj_, w.ffn_post_norm, config_.embedding_dim, eps, proj_, threads_);
    add_rows(x_, proj_);
}

// A mixture of experts: the router picks each token's experts and their
// weights, then each expert the step routes to runs once over all of its
// tokens (one matrix product per matrix, its rows read once for the
// batch); an expert no token picked is not touched.
void Runner::moe_block(const LayerWeights& w, std::uint32_t layer) {
    const auto start = std::chrono::steady_clock::now();
    const std::size_t dim = config_.embedding_dim;
    rms_norm_rows(x_, w.ffn_norm, dim, static_cast<float>(config_.norm_eps), xn_, threads_);
    route(w.experts);
    proj_.assign(n_ * dim, 0.0f);
    for (std::uint32_t e = 0; e < config_.experts.count; ++e)
        if (const std::size_t count = expert_first_[e + 1] - expert_first_[e]; count > 0)
            run_expert(w.experts, layer, e, expert_first_[e], count);
    if (w.ffn_post_norm)
        rms_norm_rows(proj_, w.ffn_post_norm, dim, static_cast<float>(config_.norm_eps), proj_, threads_);
    add_rows(x_, proj_);
    expert_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The router's logits for the step's normed rows, each token's top experts
// and weights, then those (row, weight) pairs grouped by expert (routed_,
// expert_first_).
void Runner::route(const ExpertWeights& x) {
    const std::uint32_t n_experts = config_.experts.count, k = config_.experts.used;
    matmul(x.router, xn_, n_, router_logits_, threads_);
    add_bias(router_logits_, x.router_bias, n_experts);
    picked_.resize(n_ * k);
    picked_weights_.resize(n_ * k);
    for (std::size_t r = 0; r < n_; ++r) {
        expert_weights(config_.experts.gating, router_logits_.data() + r * n_experts, n_experts, top_, k,
                       picked_weights_.data() + r * k);
        std::copy(top_.begin(), top_.end(), picked_.begin() + static_cast<std::ptrdiff_t>(r * k));
    }
    expert_first_.assign(n_experts + 1, 0);
    for (std::uint32_t e : picked_)
        ++expert_first_[e + 1];
    for (std::uint32_t e = 0; e < n_experts; ++e)
        expert_first_[e + 1] += expert_first_[e];
    routed_.resize(picked_.size());
    next_routed_.assign(expert_first_.begin(), expert_first_.end() - 1);
    for (std::size_t i = 0; i < picked_.size(); ++i)
        routed_[next_routed_[picked_[i]]++] = {static_cast<std::uint32_t>(i / k), picked_weights_[i]};
}

// Expert `expert` over its `count` routed rows from routed_[first]: gather
// the rows, gate and up, activation, down, then each row's output, times
// its weight, added to proj_.
void Runner::run_expert(const ExpertWeights& x, std::uint32_t layer, std::uint32_t expert, std::size_t first,
                        std::size_t count) {
    const std::size_t dim = config_.embedding_dim, ffn = config_.experts.ffn_dim;
    expert_in_.resize(count * dim);
    for (std::size_t i = 0; i < count; ++i)
        std::copy_n(xn_.begin() + static_cast<std::ptrdiff_t>(routed_[first + i].row * dim), dim,
                    expert_in_.begin() + static_cast<std::ptrdiff_t>(i * dim));
    const auto matrix = [&](const std::vector<WeightMatrix>& all, std::size_t which) {
        const ExpertPacks* packs = weights_.expert_packs;
        return packs ? packs->get(expert_matrix_index(layer, expert, which, config_.experts.count), all[expert],
                                  threads_)
                     : all[expert];
    };
    project(expert_in_, count, threads_, {{matrix(x.gate, 0), expert_gate_}, {matrix(x.up, 1), expert_up_}});
    if (x.gate_bias) {
        add_bias(expert_gate_, x.gate_bias + expert * ffn, ffn);
        add_bias(expert_up_, x.up_bias + expert * ffn, ffn);
    }
    activate(config_.ffn_activation, expert_gate_, expert_up_, threads_);
    matmul(matrix(x.down, 2), expert_gate_, count, expert_out_, threads_);
    add_bias(expert_out_, x.down_bias ? x.down_bias + expert * dim : nullptr, dim);
    for (std::size_t i = 0; i < count; ++i) {
        const Routed& r = routed_[first + i];
        float* out = proj_.data() + r.row * dim;
        const float* y = expert_out_.data() + i * dim;
        for (std::size_t j = 0; j < dim; ++j)
            out[j] += r.weight * y[j];
    }
}

void Runner::logits(std::span<const SeqChunk> batch, std::vector<float>& out) {
    const std::size_t dim = config_.embedding_dim;
    last_rows_.clear();
    std::size_t end = 0;
    for (const SeqChunk& c : batch) {
        end += c.tokens.size();
        const std::size_t first = end - c.logit_rows(); // the chunk's last logit_rows() rows
        last_rows_.insert(last_rows_.end(), x_.begin() + static_cast<std::ptrdiff_t>(first * dim),
                          x_.begin() + static_cast<std::ptrdiff_t>(end * dim));
    }
    if (last_rows_.empty()) {
        out.clear();
        return;
    }
    rms_norm_rows(last_rows_, weights_.output_norm, dim, static_cast<float>(config_.norm_eps), xn_, threads_);
    matmul(weights_.output, xn_, last_rows_.size() / dim, out, threads_);
}

} // namespace kvscope

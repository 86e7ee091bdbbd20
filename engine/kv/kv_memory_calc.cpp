#include "engine/kv/kv_memory_calc.h"

#include "engine/core/error.h"

namespace kvscope {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// A latent row's bytes per value: the float formats only.
std::uint64_t latent_value_bytes(KvDtype dtype) {
    switch (dtype) {
    case KvDtype::F32:
        return 4;
    case KvDtype::F16:
    case KvDtype::BF16:
        return 2;
    default:
        throw Error("latent KV (MLA) is counted in f32, f16 and bf16 only, not " + std::string(to_string(dtype)));
    }
}

KvLayout layout_for(const KvMemoryQuestion& q, KvDtype dtype) {
    if (q.layer_windows.empty())
        return {q.geometry, dtype, q.block_size};
    return {q.geometry, dtype, q.block_size, KvGroups::from_windows(q.layer_windows, q.keep_whole)};
}

// Bytes of a GQA cache, all from KvLayout: per kind, the blocks its groups
// hold (KvLayout::group_blocks) times one group's block.
KvMemoryAnswer answer_layout(const KvMemoryQuestion& q, KvDtype dtype) {
    const KvLayout layout = layout_for(q, dtype);
    const std::uint64_t tokens = q.tokens_per_sequence;
    KvMemoryAnswer a;
    a.dtype = dtype;
    a.bytes_per_token = layout.bytes_per_token();
    a.bytes_per_block = layout.bytes_per_block();
    a.bytes_per_sequence = layout.bytes_for_sequence(tokens, q.chunk_tokens);
    a.whole_bytes_per_sequence = layout.bytes_for_tokens(tokens);
    a.tail_bytes = layout.tail_bytes();
    a.fixed_bytes = layout.fixed_bytes();
    a.layers_per_block = layout.layers_per_block();
    a.groups = static_cast<std::uint32_t>(layout.num_groups());
    for (const KvKind& kind : layout.groups().kinds()) {
        const auto groups = static_cast<std::uint32_t>(kind.groups.size());
        KvKindAnswer k{kind.title(), kind.window, kind.n_layers, groups * a.layers_per_block,
                       ceil_div(std::uint64_t{groups} * a.bytes_per_block, layout.block_size()), 0, 0};
        for (std::uint32_t g : kind.groups)
            k.blocks_per_sequence += layout.group_blocks(g, tokens, q.chunk_tokens);
        k.bytes_per_sequence = k.blocks_per_sequence * a.bytes_per_block;
        a.kinds.push_back(std::move(k));
    }
    return a;
}

// A latent cache: one row of latent_dim + rope_dim values per token and
// layer, every layer in one block (there are no windows to group by).
KvMemoryAnswer answer_latent(const KvMemoryQuestion& q, KvDtype dtype) {
    const KvLatent& m = *q.latent;
    if (m.n_layers == 0 || m.latent_dim == 0)
        throw Error("a latent KV cache needs layers and a latent width");
    if (q.block_size < 1 || q.block_size > 1024)
        throw Error("block size must be in 1..1024, got " + std::to_string(q.block_size));
    const std::uint64_t row = std::uint64_t{m.latent_dim + m.rope_dim} * latent_value_bytes(dtype);
    const std::uint64_t blocks = ceil_div(q.tokens_per_sequence, q.block_size);
    KvMemoryAnswer a;
    a.dtype = dtype;
    a.bytes_per_token = m.n_layers * row;
    a.bytes_per_block = a.bytes_per_token * q.block_size;
    a.bytes_per_sequence = blocks * a.bytes_per_block;
    a.whole_bytes_per_sequence = a.bytes_per_sequence;
    a.layers_per_block = m.n_layers;
    a.groups = 1;
    a.kinds.push_back({"latent " + std::to_string(m.latent_dim) + " + " + std::to_string(m.rope_dim) + ", " +
                           std::to_string(m.n_layers) + " layers",
                       0, m.n_layers, m.n_layers, a.bytes_per_token, blocks, a.bytes_per_sequence});
    return a;
}

// Sequences of either size that fit in the device's share left after the
// weights and the pool's fixed bytes.
void count_fit(const KvMemoryQuestion& q, KvMemoryAnswer& a) {
    if (!q.device_bytes)
        return;
    const double usable = static_cast<double>(*q.device_bytes) * q.memory_fraction -
                          static_cast<double>(q.weight_bytes) - static_cast<double>(a.fixed_bytes);
    a.kv_budget_bytes = usable > 0 ? static_cast<std::uint64_t>(usable) : 0;
    a.sequences_that_fit = a.bytes_per_sequence ? *a.kv_budget_bytes / a.bytes_per_sequence : 0;
    a.whole_sequences_that_fit = a.whole_bytes_per_sequence ? *a.kv_budget_bytes / a.whole_bytes_per_sequence : 0;
}

} // namespace

std::vector<KvDtype> kv_dtypes_for(const KvMemoryQuestion& q) {
    if (q.latent)
        return {KvDtype::F32, KvDtype::F16, KvDtype::BF16};
    const auto all = all_kv_dtypes();
    return {all.begin(), all.end()};
}

KvMemoryAnswer answer_kv_memory(const KvMemoryQuestion& q, KvDtype dtype) {
    if (q.chunk_tokens == 0)
        throw Error("a step computes at least one token (chunk_tokens 0)");
    KvMemoryAnswer a = q.latent ? answer_latent(q, dtype) : answer_layout(q, dtype);
    a.total_bytes = q.sequences * a.bytes_per_sequence + a.fixed_bytes;
    count_fit(q, a);
    return a;
}

std::vector<KvMemoryAnswer> answer_kv_memory_all_dtypes(const KvMemoryQuestion& q) {
    std::vector<KvMemoryAnswer> answers;
    for (KvDtype dtype : kv_dtypes_for(q))
        answers.push_back(answer_kv_memory(q, dtype));
    return answers;
}

} // namespace kvscope

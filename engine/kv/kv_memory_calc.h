#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/kv/kv_dtype.h"
#include "engine/kv/kv_layout.h"

namespace kvscope {

// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): per token and
// layer one compressed latent of `latent_dim` values (kv_lora_rank) and a
// decoupled RoPE key of `rope_dim` values (qk_rope_head_dim), shared by
// every head, in place of K and V of 2 x kv_heads x head_dim. Only the
// calculator knows it: kvscope cannot run such a model, so KvLayout has no
// latent layout. Stored as vLLM's MLAAttentionSpec pages are: one row of
// latent_dim + rope_dim values per token and layer, f32/f16/bf16.
struct KvLatent {
    std::uint32_t n_layers = 0;
    std::uint32_t latent_dim = 0;
    std::uint32_t rope_dim = 0;
};

// "How much memory will my context use?" — the question the calculator
// answers, for every KV dtype at once.
struct KvMemoryQuestion {
    KvGeometry geometry;
    // Each layer's window (0: full attention); empty: every layer full.
    // Window layers fall into KV cache groups (kv_groups.h) that hold at
    // most KvLayout::group_blocks() blocks of a sequence.
    std::vector<std::uint32_t> layer_windows;
    // Window groups keep every token (llama.cpp's --swa-full): the layout
    // "every layer global" that the saving is measured against.
    bool keep_whole = false;
    // Tokens computed in one step (vLLM's max_num_batched_tokens, the
    // engine's default 512): a window group holds W - 1 of them and a chunk.
    std::uint64_t chunk_tokens = 512;
    // A latent cache instead of `geometry` and `layer_windows`.
    std::optional<KvLatent> latent;
    std::uint32_t block_size = 16;
    std::uint64_t tokens_per_sequence = 0;
    std::uint64_t sequences = 1;
    // With a device: how many such sequences fit next to the weights.
    std::optional<std::uint64_t> device_bytes;
    std::uint64_t weight_bytes = 0;
    double memory_fraction = 0.9; // share of device memory the engine may use (vLLM's default)
};

// One kind of layer (KvKind: full attention, or one window) of an answer:
// its groups' share of the bytes.
struct KvKindAnswer {
    std::string title;                // KvKind::title(): "sliding window 1024, 52 layers"; MLA: "latent 512 + 64, 61 layers"
    std::uint32_t window = 0;         // 0: full attention
    std::uint32_t n_layers = 0;
    std::uint32_t layer_slots = 0;    // its groups x layers per block: n_layers + padding
    std::uint64_t bytes_per_token = 0;     // a token in every one of its groups, rounded up to a byte
    std::uint64_t blocks_per_sequence = 0; // over its groups, window groups capped
    std::uint64_t bytes_per_sequence = 0;  // those blocks' bytes
};

struct KvMemoryAnswer {
    KvDtype dtype = KvDtype::F16;
    std::uint64_t bytes_per_token = 0;    // every group keeping the token, padding slots included
    std::uint64_t bytes_per_block = 0;    // one group's block
    std::uint64_t bytes_per_sequence = 0; // whole blocks, window groups capped (unless keep_whole), + the KIVI tail
    std::uint64_t tail_bytes = 0;         // KIVI: each sequence's f16 tail (included above)
    std::uint64_t fixed_bytes = 0;        // per pool, outside the blocks (fp8 scales)
    std::uint64_t total_bytes = 0;        // sequences * bytes_per_sequence + fixed_bytes
    std::optional<std::uint64_t> sequences_that_fit; // when a device is given
    std::optional<std::uint64_t> kv_budget_bytes;    // device * fraction - weights - fixed, floored at 0
    std::vector<KvKindAnswer> kinds;      // full attention first, then windows ascending; their
                                          // bytes_per_sequence + tail_bytes = bytes_per_sequence
    std::uint32_t layers_per_block = 0;   // layer slots of one block (KvGroups::layers_per_block())
    std::uint32_t groups = 0;
    // The same sequence with every layer kept whole (keep_whole's bytes);
    // equal to bytes_per_sequence for a model without windows.
    std::uint64_t whole_bytes_per_sequence = 0;
    std::optional<std::uint64_t> whole_sequences_that_fit;
};

// The dtypes a question can be answered in: every one, or for a latent
// cache f32, f16 and bf16 (the quantized formats are KvLayout's, per head).
std::vector<KvDtype> kv_dtypes_for(const KvMemoryQuestion& q);
// Throws kvscope::Error for a dtype kv_dtypes_for() does not list, or a
// shape KvLayout rejects.
KvMemoryAnswer answer_kv_memory(const KvMemoryQuestion& q, KvDtype dtype);
std::vector<KvMemoryAnswer> answer_kv_memory_all_dtypes(const KvMemoryQuestion& q);

} // namespace kvscope

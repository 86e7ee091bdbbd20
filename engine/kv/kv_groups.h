#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kvscope {

// A model's layers grouped by the attention they use, as vLLM's hybrid KV
// cache manager groups them: every group has its own block table per
// sequence over one shared pool, and a sliding-window group frees the
// blocks its window has left behind.
//
// Blocks are one size across groups: a block holds block_size tokens of
// layers_per_block() layers. A kind of layer (full attention, or a window
// of W tokens) with n layers fills ceil(n / layers_per_block()) groups, the
// last one possibly with unused layer slots (padding). layers_per_block()
// is the largest size no larger than the smallest kind whose padding is at
// most 5% of the layers: vLLM's equal-sized groups (which take the smallest
// kind's count and accept any padding), without letting padding waste the
// pool. Gemma 3 1B (4 full, 22 window layers): 2 layers per block, 13
// groups, no padding (vLLM's 4 would pad 2 of 26 slots). A model with one
// kind of layer has one group of all its layers: the dense layout.
//
// Layer l lives in group group_of(l), slot index_in_block(l) of each of
// that group's blocks.
struct KvGroup {
    std::uint32_t window = 0;           // 0: full attention; else keys less than `window` positions back
    std::vector<std::uint32_t> layers;  // model layers, ascending, at most layers_per_block()

    bool operator==(const KvGroup&) const = default;
};

// One kind of layer and the groups that hold it: what a block map draws as
// one lane ("sliding window 512, 22 layers").
struct KvKind {
    std::uint32_t window = 0;
    std::uint32_t n_layers = 0;
    std::vector<std::uint32_t> groups;
    std::string title() const; // "full attention, 4 layers" / "sliding window 512, 22 layers"
};

class KvGroups {
public:
    // Every layer full attention: one group.
    static KvGroups full(std::uint32_t n_layers);
    // From each layer's window (0 = full attention). keep_whole: window
    // groups keep the whole context (llama.cpp's --swa-full), grouped the
    // same way so that block counts compare. Throws kvscope::Error for no
    // layers.
    static KvGroups from_windows(std::span<const std::uint32_t> windows, bool keep_whole = false);

    std::size_t size() const { return groups_.size(); }
    const KvGroup& operator[](std::size_t g) const { return groups_[g]; }
    std::uint32_t n_layers() const { return static_cast<std::uint32_t>(group_of_.size()); }
    std::uint32_t layers_per_block() const { return layers_per_block_; }
    std::uint32_t group_of(std::uint32_t layer) const { return group_of_[layer]; }
    std::uint32_t index_in_block(std::uint32_t layer) const { return index_in_block_[layer]; }

    // Whether group g drops the tokens its window has left behind: a
    // window group, unless keep_whole.
    bool frees(std::size_t g) const { return groups_[g].window > 0 && !keep_whole_; }
    bool keeps_whole() const { return keep_whole_; }
    bool has_windows() const; // any window layer, freeing or not
    bool frees_any() const { return has_windows() && !keep_whole_; } // some group frees(g)
    std::vector<KvKind> kinds() const; // full attention first, then windows ascending
    std::vector<std::uint32_t> layer_windows() const; // each layer's window: what from_windows was given

    bool operator==(const KvGroups&) const = default;

private:
    std::vector<KvGroup> groups_;
    std::vector<std::uint32_t> group_of_;
    std::vector<std::uint32_t> index_in_block_;
    std::uint32_t layers_per_block_ = 0;
    bool keep_whole_ = false;
};

} // namespace kvscope

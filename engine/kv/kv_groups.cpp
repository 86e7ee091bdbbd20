#include "engine/kv/kv_groups.h"

#include <algorithm>
#include <map>

#include "engine/core/error.h"

namespace kvscope {
namespace {

std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) { return (a + b - 1) / b; }

// Layers of each kind, by window (0 first: std::map orders ascending).
std::map<std::uint32_t, std::vector<std::uint32_t>> layers_by_window(std::span<const std::uint32_t> windows) {
    std::map<std::uint32_t, std::vector<std::uint32_t>> kinds;
    for (std::uint32_t l = 0; l < windows.size(); ++l)
        kinds[windows[l]].push_back(l);
    return kinds;
}

// See the header: the largest size up to the smallest kind whose padding
// stays within 5% of the layers (size 1 never pads).
std::uint32_t choose_layers_per_block(const std::map<std::uint32_t, std::vector<std::uint32_t>>& kinds,
                                      std::uint32_t n_layers) {
    std::uint32_t smallest = n_layers;
    for (const auto& [window, layers] : kinds)
        smallest = std::min(smallest, static_cast<std::uint32_t>(layers.size()));
    for (std::uint32_t size = smallest; size > 1; --size) {
        std::uint32_t slots = 0;
        for (const auto& [window, layers] : kinds)
            slots += ceil_div(static_cast<std::uint32_t>(layers.size()), size) * size;
        if (20 * (slots - n_layers) <= n_layers)
            return size;
    }
    return 1;
}

} // namespace

std::string KvKind::title() const {
    const std::string layers = std::to_string(n_layers) + (n_layers == 1 ? " layer" : " layers");
    return window == 0 ? "full attention, " + layers : "sliding window " + std::to_string(window) + ", " + layers;
}

KvGroups KvGroups::full(std::uint32_t n_layers) {
    const std::vector<std::uint32_t> windows(n_layers, 0);
    return from_windows(windows);
}

KvGroups KvGroups::from_windows(std::span<const std::uint32_t> windows, bool keep_whole) {
    if (windows.empty())
        throw Error("KV cache groups need at least one layer");
    const auto n_layers = static_cast<std::uint32_t>(windows.size());
    const auto kinds = layers_by_window(windows);
    KvGroups g;
    g.layers_per_block_ = choose_layers_per_block(kinds, n_layers);
    g.keep_whole_ = keep_whole;
    g.group_of_.resize(n_layers);
    g.index_in_block_.resize(n_layers);
    for (const auto& [window, layers] : kinds)
        for (std::size_t first = 0; first < layers.size(); first += g.layers_per_block_) {
            KvGroup group{window, {}};
            for (std::size_t i = first; i < std::min(layers.size(), first + g.layers_per_block_); ++i) {
                g.group_of_[layers[i]] = static_cast<std::uint32_t>(g.groups_.size());
                g.index_in_block_[layers[i]] = static_cast<std::uint32_t>(group.layers.size());
                group.layers.push_back(layers[i]);
            }
            g.groups_.push_back(std::move(group));
        }
    return g;
}

bool KvGroups::has_windows() const {
    return std::any_of(groups_.begin(), groups_.end(), [](const KvGroup& g) { return g.window > 0; });
}

std::vector<std::uint32_t> KvGroups::layer_windows() const {
    std::vector<std::uint32_t> windows(group_of_.size());
    for (std::size_t l = 0; l < windows.size(); ++l)
        windows[l] = groups_[group_of_[l]].window;
    return windows;
}

std::vector<KvKind> KvGroups::kinds() const {
    std::vector<KvKind> kinds;
    for (std::uint32_t g = 0; g < groups_.size(); ++g) {
        if (kinds.empty() || kinds.back().window != groups_[g].window)
            kinds.push_back({groups_[g].window, 0, {}});
        kinds.back().n_layers += static_cast<std::uint32_t>(groups_[g].layers.size());
        kinds.back().groups.push_back(g);
    }
    return kinds;
}

} // namespace kvscope

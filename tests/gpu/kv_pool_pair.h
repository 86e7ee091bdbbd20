// One layer of a KV pool held twice, on the host for the CPU kernels and on
// the device for the CUDA ones, both described by the engine's KvLayout
// (through paged_kv_view), so that both sides use the same addresses.
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernels/cuda/device_buffer.h"

namespace gpu_check {

// The KV dtypes whose rows are written one token at a time (every one
// but KIVI, which seals whole blocks from a per-sequence tail).
inline const std::vector<kvscope::KvDtype>& row_kv_dtypes() {
    using kvscope::KvDtype;
    static const std::vector<KvDtype> dtypes{KvDtype::F32,  KvDtype::F16,  KvDtype::BF16,
                                             KvDtype::Fp8E4M3, KvDtype::Int8, KvDtype::Int4};
    return dtypes;
}

inline const std::vector<kvscope::KvDtype>& all_kv_dtypes() {
    using kvscope::KvDtype;
    static const std::vector<KvDtype> dtypes{KvDtype::F32,  KvDtype::F16,  KvDtype::BF16,     KvDtype::Fp8E4M3,
                                             KvDtype::Int8, KvDtype::Int4, KvDtype::Int4Kivi, KvDtype::Int2Kivi};
    return dtypes;
}

struct KvPoolPair {
    static constexpr std::uint32_t kLayers = 3;
    static constexpr std::uint32_t kLayer = 1; // the middle layer: rows of the others must stay untouched

    kvscope::KvLayout layout;
    std::size_t n_blocks;
    std::vector<std::byte> host;
    std::vector<float> host_fixed; // fp8 scales (every layer's), else empty
    kvscope::kernels::cuda::DeviceBuffer device;
    kvscope::kernels::cuda::DeviceBuffer device_fixed;

    // Host bytes: `fill` everywhere (0xFF reads as NaN in every float format).
    KvPoolPair(kvscope::KvGeometry geometry, kvscope::KvDtype dtype, std::uint32_t block_size, std::size_t blocks,
               std::mt19937& rng, unsigned char fill = 0xFF)
        : layout({kLayers, geometry.n_kv_heads, geometry.head_dim}, dtype, block_size), n_blocks(blocks),
          host(blocks * layout.bytes_per_block(), std::byte{fill}) {
        if (layout.fixed_bytes() > 0) {
            // Per-head fp8 scales around max|x| / 448 for values in [-1, 1],
            // varied so that a head reading its neighbour's scale shows.
            std::uniform_real_distribution<float> scale(0.5f / 448.0f, 2.0f / 448.0f);
            host_fixed.resize(layout.fixed_bytes() / sizeof(float));
            for (float& s : host_fixed)
                s = scale(rng);
            device_fixed = kvscope::kernels::cuda::upload_vector(host_fixed);
        }
        device = kvscope::kernels::cuda::DeviceBuffer(host.size());
    }

    kvscope::kernels::cpu::PagedKv cpu_view() {
        return kvscope::paged_kv_view(layout, kLayer, host.data(), n_blocks,
                                      host_fixed.empty() ? nullptr : host_fixed.data());
    }
    kvscope::kernels::cpu::PagedKv cuda_view() const {
        return kvscope::paged_kv_view(layout, kLayer, static_cast<std::byte*>(device.data()), n_blocks,
                                      host_fixed.empty() ? nullptr : device_fixed.as<float>());
    }
    void upload() { device.upload(host.data(), host.size()); }
    std::vector<std::byte> download() const {
        std::vector<std::byte> bytes(host.size());
        device.download(bytes.data(), bytes.size());
        return bytes;
    }
};

inline std::vector<float> random_floats(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::uniform_real_distribution<float> uniform(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v)
        x = uniform(rng);
    return v;
}

inline std::string shape_name(kvscope::KvDtype dtype, std::uint32_t n_kv_heads, std::uint32_t head_dim,
                              std::uint32_t block_size) {
    return std::string(kvscope::to_string(dtype)) + " kv_heads=" + std::to_string(n_kv_heads) +
           " head_dim=" + std::to_string(head_dim) + " block=" + std::to_string(block_size);
}

} // namespace gpu_check

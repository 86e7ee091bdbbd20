// cuda::write_kv stores exactly the bytes cpu::write_kv stores: the same
// f16/bf16/fp8 roundings, int8 and int4 codes and f16 scales, at the same
// KvLayout addresses, and nothing else of the pool changes. No tolerance:
// both sides quantize with IEEE division and round-to-nearest-even
// (kv_device_codes.cuh), so any difference is a bug.
#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu_check.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cuda/kv_write.h"
#include "kv_pool_pair.h"

namespace cuda = kvscope::kernels::cuda;
namespace cpu = kvscope::kernels::cpu;
using gpu_check::KvPoolPair;
using kvscope::KvDtype;

namespace {

// Writes `tokens` random tokens into random distinct slots through both
// writers, the pools starting from the same random bytes.
void same_bytes_as_cpu(KvDtype dtype, std::uint32_t n_kv_heads, std::uint32_t head_dim, std::uint32_t block_size,
                       std::uint32_t tokens, std::mt19937& rng) {
    const std::size_t n_blocks = tokens / block_size + 3;
    KvPoolPair pools({KvPoolPair::kLayers, n_kv_heads, head_dim}, dtype, block_size, n_blocks, rng);
    for (auto& b : pools.host)
        b = static_cast<std::byte>(rng());
    pools.upload();

    std::vector<std::uint32_t> slots(n_blocks * block_size);
    std::iota(slots.begin(), slots.end(), 0u);
    std::shuffle(slots.begin(), slots.end(), rng);
    slots.resize(tokens);
    const std::size_t row = std::size_t{n_kv_heads} * head_dim;
    // Values in [-3, 3] plus a few exact zeros rows' worth of edge cases:
    // large enough that fp8 saturates for some heads.
    std::vector<float> k = gpu_check::random_floats(tokens * row, rng, 3.0f);
    std::vector<float> v = gpu_check::random_floats(tokens * row, rng, 3.0f);
    std::fill(k.begin(), k.begin() + head_dim, 0.0f); // an all-zero row: scale 0, codes 0

    const cpu::PagedKv host_kv = pools.cpu_view();
    for (std::uint32_t t = 0; t < tokens; ++t)
        cpu::write_kv(host_kv, slots[t] / block_size, slots[t] % block_size, k.data() + t * row, v.data() + t * row);

    cuda::DeviceBuffer k_d = cuda::upload_vector(k), v_d = cuda::upload_vector(v), slots_d = cuda::upload_vector(slots);
    cuda::write_kv(pools.cuda_view(), {k_d.as<float>(), v_d.as<float>(), slots_d.as<std::uint32_t>(), tokens});
    cuda::synchronize();
    const std::vector<std::byte> device = pools.download();
    const auto diff = std::mismatch(device.begin(), device.end(), pools.host.begin());
    GPU_CHECK(diff.first == device.end(),
              gpu_check::shape_name(dtype, n_kv_heads, head_dim, block_size) + ": first differing byte at offset " +
                  std::to_string(diff.first - device.begin()) + " of " + std::to_string(device.size()));
}

void every_dtype_and_shape() {
    std::mt19937 rng(11);
    const std::uint32_t head_dims[] = {8, 64, 80, 128, 256};
    const std::uint32_t block_sizes[] = {8, 16, 32};
    for (const KvDtype dtype : gpu_check::cuda_kv_dtypes())
        for (const std::uint32_t head_dim : head_dims)
            for (const std::uint32_t block_size : block_sizes) {
                const auto kv_heads = static_cast<std::uint32_t>(1 + rng() % 4);
                same_bytes_as_cpu(dtype, kv_heads, head_dim, block_size, static_cast<std::uint32_t>(1 + rng() % 70), rng);
            }
}

void rejects_what_it_cannot_write() {
    std::mt19937 rng(3);
    KvPoolPair kivi({KvPoolPair::kLayers, 2, 64}, KvDtype::Int4Kivi, 16, 4, rng);
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::write_kv(kivi.cuda_view(), {nullptr, nullptr, nullptr, 0}); }, "kivi", "a KIVI pool");
    KvPoolPair wide({KvPoolPair::kLayers, 1, 512}, KvDtype::F16, 16, 4, rng);
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::write_kv(wide.cuda_view(), {nullptr, nullptr, nullptr, 0}); }, "head_dim", "head_dim 512");
}

} // namespace

int main() {
    return gpu_check::run("test_cuda_kv_write", {
                                                    {"byte-identical to cpu::write_kv", every_dtype_and_shape},
                                                    {"clear errors", rejects_what_it_cannot_write},
                                                });
}

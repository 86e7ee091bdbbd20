// cuda::write_kv stores exactly the bytes cpu::write_kv stores: the same
// f16/bf16/fp8 roundings, int8 and int4 codes and f16 scales, KIVI's tails
// and sealed blocks, at the same KvLayout addresses, and nothing else of the
// pool changes. No tolerance:
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
    for (const KvDtype dtype : gpu_check::row_kv_dtypes())
        for (const std::uint32_t head_dim : head_dims)
            for (const std::uint32_t block_size : block_sizes) {
                const auto kv_heads = static_cast<std::uint32_t>(1 + rng() % 4);
                same_bytes_as_cpu(dtype, kv_heads, head_dim, block_size, static_cast<std::uint32_t>(1 + rng() % 70), rng);
            }
}

// KIVI: several sequences, each with its own tail, written first as one
// prefill batch (chunks filling and sealing several blocks, ending mid-block
// or exactly at a block's end), then as decode steps of one token per
// sequence; pool and tails must equal the CPU's token-by-token writes.
void kivi_same_bytes_as_cpu(KvDtype dtype, std::uint32_t n_kv_heads, std::uint32_t head_dim,
                            std::uint32_t block_size, std::mt19937& rng) {
    const std::vector<std::uint32_t> prompt{3 * block_size + 5, block_size, 1, 2 * block_size - 1};
    const std::uint32_t decode_steps = block_size + 2; // every sequence seals at least once more
    const auto n_seqs = static_cast<std::uint32_t>(prompt.size());
    const std::uint32_t table_stride = 5;
    const std::size_t n_blocks = std::size_t{n_seqs} * table_stride + 2;
    KvPoolPair pools({KvPoolPair::kLayers, n_kv_heads, head_dim}, dtype, block_size, n_blocks, rng);
    for (auto& b : pools.host)
        b = static_cast<std::byte>(rng());
    pools.upload();
    const std::size_t tail_bytes = pools.layout.tail_bytes();
    std::vector<std::byte> host_tails(n_seqs * tail_bytes);
    for (auto& b : host_tails)
        b = static_cast<std::byte>(rng());
    cuda::DeviceBuffer device_tails = cuda::upload_vector(host_tails);
    std::vector<std::uint32_t> ids(n_blocks);
    std::iota(ids.begin(), ids.end(), 0u);
    std::shuffle(ids.begin(), ids.end(), rng);

    const cpu::PagedKv host_kv = pools.cpu_view();
    const std::size_t row = std::size_t{n_kv_heads} * head_dim;
    std::vector<std::uint32_t> length(n_seqs, 0);
    // Appends `count[s]` tokens to every sequence s, on both sides.
    const auto write_step = [&](const std::vector<std::uint32_t>& count) {
        std::vector<std::uint32_t> slots;
        std::vector<std::byte*> tails_host, tails_device;
        for (std::uint32_t s = 0; s < n_seqs; ++s)
            for (std::uint32_t i = 0; i < count[s]; ++i, ++length[s]) {
                const std::uint32_t p = length[s];
                slots.push_back(ids[s * table_stride + p / block_size] * block_size + p % block_size);
                tails_host.push_back(host_tails.data() + s * tail_bytes);
                tails_device.push_back(device_tails.as<std::byte>() + s * tail_bytes);
            }
        const auto n = static_cast<std::uint32_t>(slots.size());
        const std::vector<float> k = gpu_check::random_floats(n * row, rng), v = gpu_check::random_floats(n * row, rng);
        for (std::uint32_t t = 0; t < n; ++t)
            cpu::write_kv(host_kv, slots[t] / block_size, slots[t] % block_size, k.data() + t * row,
                          v.data() + t * row, tails_host[t]);
        cuda::DeviceBuffer k_d = cuda::upload_vector(k), v_d = cuda::upload_vector(v);
        cuda::DeviceBuffer slots_d = cuda::upload_vector(slots), tails_d = cuda::upload_vector(tails_device);
        cuda::KvWriteBatch batch{k_d.as<float>(), v_d.as<float>(), slots_d.as<std::uint32_t>(), n};
        batch.tails = tails_d.as<std::byte*>();
        batch.host_slots = slots.data();
        batch.host_tails = tails_device.data();
        cuda::write_kv(pools.cuda_view(), batch);
        cuda::synchronize();
    };
    write_step(prompt);
    for (std::uint32_t step = 0; step < decode_steps; ++step)
        write_step(std::vector<std::uint32_t>(n_seqs, 1));

    const std::string name = gpu_check::shape_name(dtype, n_kv_heads, head_dim, block_size);
    const std::vector<std::byte> pool = pools.download();
    const auto diff = std::mismatch(pool.begin(), pool.end(), pools.host.begin());
    GPU_CHECK(diff.first == pool.end(), name + ": pools differ from byte " + std::to_string(diff.first - pool.begin()));
    std::vector<std::byte> tails(host_tails.size());
    device_tails.download(tails.data(), tails.size());
    GPU_CHECK(tails == host_tails, name + ": tails differ");
}

void kivi_every_shape() {
    std::mt19937 rng(12);
    for (const KvDtype dtype : {KvDtype::Int4Kivi, KvDtype::Int2Kivi})
        for (const std::uint32_t head_dim : {8u, 64u, 128u})
            for (const std::uint32_t block_size : {8u, 16u, 32u})
                kivi_same_bytes_as_cpu(dtype, static_cast<std::uint32_t>(1 + rng() % 3), head_dim, block_size, rng);
}

void rejects_what_it_cannot_write() {
    std::mt19937 rng(3);
    KvPoolPair kivi({KvPoolPair::kLayers, 2, 64}, KvDtype::Int4Kivi, 16, 4, rng);
    const cuda::DeviceBuffer rows(2 * 64 * sizeof(float)), slots(sizeof(std::uint32_t));
    gpu_check::expect_throw<std::invalid_argument>(
        [&] {
            cuda::write_kv(kivi.cuda_view(), {rows.as<float>(), rows.as<float>(), slots.as<std::uint32_t>(), 1});
        },
        "tail", "a KIVI write without tails");
    KvPoolPair wide({KvPoolPair::kLayers, 1, 512}, KvDtype::F16, 16, 4, rng);
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::write_kv(wide.cuda_view(), {nullptr, nullptr, nullptr, 0}); }, "head_dim", "head_dim 512");
}

} // namespace

int main() {
    return gpu_check::run("test_cuda_kv_write", {
                                                    {"byte-identical to cpu::write_kv", every_dtype_and_shape},
                                                    {"KIVI: tails and sealed blocks as the CPU's", kivi_every_shape},
                                                    {"clear errors", rejects_what_it_cannot_write},
                                                });
}

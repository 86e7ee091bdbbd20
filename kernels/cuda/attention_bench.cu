#include "kernels/cuda/attention_bench.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/kv_write.h"
#include "kernels/cuda/paged_attention.h"

namespace kvscope::kernels::cuda {
namespace {

constexpr std::uint32_t kFillTokens = 16384; // tokens written per write_kv call while filling

// Uniform values in [-1, 1) from a hash of (seed, index): reproducible,
// no host round trip.
__global__ void fill_uniform_kernel(float* x, std::size_t n, std::uint64_t seed) {
    const std::size_t i = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    std::uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    x[i] = static_cast<float>(h >> 40) * 0x1p-23f - 1.0f;
}

void fill_uniform(float* x, std::size_t n, std::uint64_t seed) {
    fill_uniform_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x, n, seed);
    detail::check_launch("fill_uniform_kernel");
}

// Event-timed region; events are freed however the timing ends.
class EventPair {
public:
    EventPair() {
        KVSCOPE_CUDA_CHECK(cudaEventCreate(&start_));
        KVSCOPE_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    ~EventPair() {
        cudaEventDestroy(start_);
        cudaEventDestroy(stop_);
    }
    EventPair(const EventPair&) = delete;
    EventPair& operator=(const EventPair&) = delete;
    void start() { KVSCOPE_CUDA_CHECK(cudaEventRecord(start_)); }
    double stop_seconds() {
        KVSCOPE_CUDA_CHECK(cudaEventRecord(stop_));
        KVSCOPE_CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0.0f;
        KVSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        return ms * 1e-3;
    }

private:
    cudaEvent_t start_{}, stop_{};
};

// Physical block of (sequence, logical block) for every sequence: a
// shuffled permutation of the pool when paged, else consecutive runs.
std::vector<std::uint32_t> make_tables(std::size_t n_blocks, bool paged, std::uint64_t seed) {
    std::vector<std::uint32_t> table(n_blocks);
    std::iota(table.begin(), table.end(), 0u);
    if (paged) {
        std::mt19937_64 rng(seed);
        std::shuffle(table.begin(), table.end(), rng);
    }
    return table;
}

// Writes K/V for every position of every sequence through write_kv.
void fill_pool(const cpu::PagedKv& kv, const std::vector<std::uint32_t>& table, std::uint32_t batch,
               std::uint32_t context, std::uint32_t blocks_per_seq, std::uint64_t seed) {
    const std::size_t row = std::size_t{kv.n_kv_heads} * kv.head_dim;
    const std::size_t total = std::size_t{batch} * context;
    const std::size_t chunk = std::min<std::size_t>(kFillTokens, total);
    DeviceBuffer k(chunk * row * sizeof(float)), v(chunk * row * sizeof(float));
    DeviceBuffer slots(chunk * sizeof(std::uint32_t));
    std::vector<std::uint32_t> host_slots(chunk);
    for (std::size_t first = 0; first < total; first += chunk) {
        const std::size_t n = std::min(chunk, total - first);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t seq = (first + i) / context, pos = (first + i) % context;
            host_slots[i] = table[seq * blocks_per_seq + pos / kv.block_size] * kv.block_size + pos % kv.block_size;
        }
        slots.upload(host_slots.data(), n * sizeof(std::uint32_t));
        fill_uniform(k.as<float>(), n * row, seed + 2 * first);
        fill_uniform(v.as<float>(), n * row, seed + 2 * first + 1);
        write_kv(kv, {k.as<float>(), v.as<float>(), slots.as<std::uint32_t>(), static_cast<std::uint32_t>(n)});
    }
}

} // namespace

DecodeBenchResult bench_decode_attention(const DecodeBenchConfig& config) {
    if (config.batch == 0 || config.context == 0 || config.iterations <= 0 || config.kv_bytes_per_token == 0)
        throw std::invalid_argument(
            "bench_decode_attention: batch, context, iterations and kv_bytes_per_token must be positive");
    cpu::PagedKv kv = config.layout;
    const std::uint32_t blocks_per_seq = (config.context + kv.block_size - 1) / kv.block_size;
    kv.n_blocks = std::size_t{config.batch} * blocks_per_seq;
    DeviceBuffer pool(kv.n_blocks * kv.bytes_per_block);
    kv.pool = static_cast<std::byte*>(pool.data());
    DeviceBuffer fixed;
    if (kv.elem == cpu::KvElem::Fp8E4M3) {
        const std::vector<float> ones(2 * std::size_t{kv.n_kv_heads}, 1.0f);
        fixed = upload_vector(ones);
        kv.fixed_scales = fixed.as<float>();
    }
    const std::vector<std::uint32_t> table = make_tables(kv.n_blocks, config.paged, config.seed);
    fill_pool(kv, table, config.batch, config.context, blocks_per_seq, config.seed);

    const std::vector<std::uint32_t> seq = [&] {
        std::vector<std::uint32_t> s(config.batch);
        std::iota(s.begin(), s.end(), 0u);
        return s;
    }();
    const std::vector<std::uint32_t> position(config.batch, config.context - 1);
    check_attention_batch(kv, seq, position, config.context, config.paged ? table : std::vector<std::uint32_t>(),
                          blocks_per_seq, config.batch);
    DeviceBuffer table_d = upload_vector(table), seq_d = upload_vector(seq), position_d = upload_vector(position);
    const std::size_t q_floats = std::size_t{config.batch} * config.n_heads * kv.head_dim;
    DeviceBuffer q(q_floats * sizeof(float)), out(q_floats * sizeof(float));
    fill_uniform(q.as<float>(), q_floats, config.seed + 7);

    AttentionBatch batch;
    batch.q = q.as<float>();
    batch.out = out.as<float>();
    batch.n_queries = config.batch;
    batch.n_heads = config.n_heads;
    batch.seq = seq_d.as<std::uint32_t>();
    batch.position = position_d.as<std::uint32_t>();
    batch.max_context = config.context;
    batch.block_tables = config.paged ? table_d.as<std::uint32_t>() : nullptr;
    batch.table_stride = blocks_per_seq;
    DeviceBuffer workspace(attention_workspace_bytes(kv, batch));

    for (int i = 0; i < 3; ++i)
        paged_attention(kv, batch, workspace.data(), workspace.size());
    synchronize();
    EventPair events;
    events.start();
    for (int i = 0; i < config.iterations; ++i)
        paged_attention(kv, batch, workspace.data(), workspace.size());
    const double seconds = events.stop_seconds();
    synchronize();

    return {seconds / config.iterations,
            static_cast<double>(config.kv_bytes_per_token) * config.batch * config.context};
}

double copy_bandwidth(std::size_t bytes, int iterations) {
    if (bytes == 0 || iterations <= 0)
        throw std::invalid_argument("copy_bandwidth: bytes and iterations must be positive");
    DeviceBuffer from(bytes), to(bytes);
    from.fill_bytes(1);
    KVSCOPE_CUDA_CHECK(cudaMemcpy(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice));
    EventPair events;
    events.start();
    for (int i = 0; i < iterations; ++i)
        KVSCOPE_CUDA_CHECK(cudaMemcpyAsync(to.data(), from.data(), bytes, cudaMemcpyDeviceToDevice));
    const double seconds = events.stop_seconds();
    return 2.0 * static_cast<double>(bytes) * iterations / seconds;
}

} // namespace kvscope::kernels::cuda

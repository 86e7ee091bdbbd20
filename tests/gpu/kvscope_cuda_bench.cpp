// kvscope-cuda-bench: the CUDA decode attention on synthetic KV, against
// the device's copy bandwidth measured in the same run.
//
//   kvscope-cuda-bench [--quick]
//
// Llama-3-8B geometry (32 query heads, 8 KV heads, head dim 128), batch 32,
// block size 16, contexts 1k/8k/32k, KV in f16, int8 and int4, each paged
// (shuffled block table) and contiguous (no table). One layer's K and V;
// bandwidth counts the K/V bytes (values and scales) each call must read.
// --quick: contexts 1k and 8k only.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "engine/kv/kv_layout.h"
#include "engine/runtime/paged_kv_view.h"
#include "kernels/cuda/attention_bench.h"
#include "kernels/cuda/cuda_device.h"

namespace cuda = kvscope::kernels::cuda;
using kvscope::KvDtype;

namespace {

constexpr std::uint32_t kHeads = 32, kKvHeads = 8, kHeadDim = 128, kBatch = 32, kBlockSize = 16;

cuda::DecodeBenchResult run_one(KvDtype dtype, std::uint32_t context, bool paged) {
    const kvscope::KvLayout layout({1, kKvHeads, kHeadDim}, dtype, kBlockSize);
    cuda::DecodeBenchConfig config;
    config.layout = kvscope::paged_kv_view(layout, 0, nullptr, 0, nullptr);
    config.kv_bytes_per_token = layout.bytes_per_token();
    config.n_heads = kHeads;
    config.batch = kBatch;
    config.context = context;
    config.paged = paged;
    return cuda::bench_decode_attention(config);
}

int run(bool quick) {
    const cuda::DeviceProbe device = cuda::probe_device();
    if (device.count == 0) {
        std::fprintf(stderr, "kvscope-cuda-bench: no CUDA device (%s)\n", device.error.c_str());
        return 1;
    }
    const double copy = cuda::copy_bandwidth(std::size_t{4} << 30, 10);
    std::printf("device: %s, %.1f GiB\n", device.name.c_str(), static_cast<double>(device.memory_total) / (1 << 30));
    std::printf("copy bandwidth (cudaMemcpy D2D, 4 GiB, read + write): %.0f GB/s\n\n", copy / 1e9);
    std::printf("decode attention: batch %u, %u query heads, %u KV heads, head dim %u, block %u, one layer\n", kBatch,
                kHeads, kKvHeads, kHeadDim, kBlockSize);
    std::printf("%-6s %8s %10s %10s %8s %10s %8s %8s %8s %8s\n", "kv", "context", "KV MB", "paged us", "of copy",
                "contig us", "of copy", "paged/", "f16/this", "f16/this");
    std::printf("%-6s %8s %10s %10s %8s %10s %8s %8s %8s %8s\n", "", "", "", "", "", "", "", "contig", "time",
                "bytes");
    std::vector<std::uint32_t> contexts{1024, 8192};
    if (!quick)
        contexts.push_back(32768);
    std::vector<cuda::DecodeBenchResult> f16(contexts.size());
    for (const KvDtype dtype : {KvDtype::F16, KvDtype::Int8, KvDtype::Int4})
        for (std::size_t c = 0; c < contexts.size(); ++c) {
            const cuda::DecodeBenchResult paged = run_one(dtype, contexts[c], true);
            const cuda::DecodeBenchResult contiguous = run_one(dtype, contexts[c], false);
            if (dtype == KvDtype::F16)
                f16[c] = paged;
            std::printf("%-6s %8u %10.1f %10.1f %7.0f%% %10.1f %7.0f%% %8.3f %8.2f %8.2f\n",
                        std::string(to_string(dtype)).c_str(), contexts[c], paged.kv_bytes_per_call / 1e6,
                        paged.seconds_per_call * 1e6, 100.0 * paged.bytes_per_second() / copy,
                        contiguous.seconds_per_call * 1e6, 100.0 * contiguous.bytes_per_second() / copy,
                        paged.seconds_per_call / contiguous.seconds_per_call,
                        f16[c].seconds_per_call / paged.seconds_per_call,
                        f16[c].kv_bytes_per_call / paged.kv_bytes_per_call);
            std::fflush(stdout);
        }
    std::printf("\n\"of copy\": achieved KV bandwidth over the copy's (target >= 80%% paged at 8k+).\n"
                "paged/contig: time ratio (target <= 1.05). f16/this: paged speed-up over f16 against the\n"
                "byte ratio (target: the speed-up keeps up with the bytes saved).\n");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    if (argc > 1 && !quick) {
        std::fprintf(stderr, "usage: kvscope-cuda-bench [--quick]\n");
        return 2;
    }
    try {
        return run(quick);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kvscope-cuda-bench: %s\n", e.what());
        return 1;
    }
}

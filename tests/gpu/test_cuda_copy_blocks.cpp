// The CUDA block copy (copy-on-write on the device) equals a host memcpy.
#include <cstring>
#include <random>
#include <vector>

#include "gpu_check.h"
#include "kernels/cuda/copy_blocks.h"

namespace {

void copies_like_memcpy(std::size_t bytes_per_block) {
    const std::size_t blocks = 64;
    std::vector<std::byte> pool(blocks * bytes_per_block);
    std::mt19937 rng(7);
    for (auto& b : pool)
        b = static_cast<std::byte>(rng());
    const std::vector<std::uint32_t> src{3, 10, 63, 0}, dst{40, 11, 2, 62};
    std::vector<std::byte> expected = pool;
    for (std::size_t i = 0; i < src.size(); ++i)
        std::memcpy(expected.data() + dst[i] * bytes_per_block, pool.data() + src[i] * bytes_per_block,
                    bytes_per_block);
    const std::string error = kvscope::kernels::cuda::copy_blocks_on_device(
        pool.data(), pool.size(), bytes_per_block, src.data(), dst.data(), src.size());
    GPU_CHECK(error.empty(), error);
    GPU_CHECK(pool == expected, "the copied pool differs from memcpy's");
}

} // namespace

int main() {
    return gpu_check::run("test_cuda_copy_blocks", {
                                                       {"16-byte words", [] { copies_like_memcpy(4096); }},
                                                       {"odd block size", [] { copies_like_memcpy(1234); }},
                                                   });
}

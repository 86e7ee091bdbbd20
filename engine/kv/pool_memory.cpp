#include "engine/kv/pool_memory.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>

#include "engine/core/error.h"

#ifdef KVSCOPE_HAVE_CUDA
#include "kernels/cuda/dense_ops.h"
#include "kernels/cuda/device_buffer.h"
#endif

namespace kvscope {
namespace {

std::shared_ptr<std::byte> allocate(std::size_t bytes, MemoryPlace place) {
    if (place == MemoryPlace::Host) {
        // calloc, not new[](): the same zeroes, but large pools come as
        // fresh pages the OS backs only when written, so a swap pool costs
        // RAM only for what is swapped out.
        void* memory = std::calloc(bytes, 1);
        if (memory == nullptr && bytes > 0)
            throw Error("cannot allocate a host KV pool of " + std::to_string(bytes >> 20) + " MiB");
        return std::shared_ptr<std::byte>(static_cast<std::byte*>(memory), [](std::byte* p) { std::free(p); });
    }
#ifdef KVSCOPE_HAVE_CUDA
    namespace cuda = kernels::cuda;
    try {
        auto buffer = std::make_shared<cuda::DeviceBuffer>(bytes);
        buffer->fill_bytes(0);
        return std::shared_ptr<std::byte>(buffer, buffer->as<std::byte>());
    } catch (const std::exception& e) {
        throw Error("cannot put a KV pool of " + std::to_string(bytes >> 20) + " MiB on the GPU: " + e.what());
    }
#else
    throw Error("a KV pool on the GPU needs a build with CUDA (-DKVSCOPE_CUDA=ON)");
#endif
}

} // namespace

PoolMemory::PoolMemory(std::size_t bytes, MemoryPlace place)
    : place_(place), bytes_(bytes), memory_(allocate(bytes, place)) {}

void PoolMemory::copy(const PoolMemory& from, std::size_t from_offset, PoolMemory& to, std::size_t to_offset,
                      std::size_t bytes) {
    if (from.place_ == MemoryPlace::Host && to.place_ == MemoryPlace::Host) {
        std::copy_n(from.data() + from_offset, bytes, to.data() + to_offset);
        return;
    }
#ifdef KVSCOPE_HAVE_CUDA
    try {
        kernels::cuda::copy_bytes(to.data() + to_offset, from.data() + from_offset, bytes);
    } catch (const std::exception& e) {
        throw Error(std::string("KV block copy on the GPU failed: ") + e.what());
    }
#else
    throw Error("a KV block copy on the GPU needs a build with CUDA");
#endif
}

} // namespace kvscope

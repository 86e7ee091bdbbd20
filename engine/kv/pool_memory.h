#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace kvscope {

// Where a pool's bytes live: host memory, or one cudaMalloc on the GPU
// (never managed memory, so "VRAM" in a snapshot means VRAM).
enum class MemoryPlace : std::uint8_t { Host, Cuda };

// One zeroed allocation of `bytes`, in the place asked for. A Cuda pool in
// a build without CUDA, or one the device cannot hold, throws
// kvscope::Error.
class PoolMemory {
public:
    PoolMemory(std::size_t bytes, MemoryPlace place);

    std::byte* data() const { return memory_.get(); }
    std::size_t size() const { return bytes_; }
    MemoryPlace place() const { return place_; }

    // Copies `bytes` between any two pools (host to host with memcpy,
    // anything touching the GPU with cudaMemcpy): copy-on-write inside a
    // pool and swapping between the GPU pool and the host swap pool.
    static void copy(const PoolMemory& from, std::size_t from_offset, PoolMemory& to, std::size_t to_offset,
                     std::size_t bytes);

private:
    MemoryPlace place_;
    std::size_t bytes_;
    // Owns a host array or a device buffer; the pointer is its first byte.
    std::shared_ptr<std::byte> memory_;
};

} // namespace kvscope

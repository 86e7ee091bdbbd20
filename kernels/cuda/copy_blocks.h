#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvscope::kernels::cuda {

// Copies whole KV blocks inside one device pool: block src[i] -> dst[i], for
// copy-on-write of shared blocks (vLLM's copy_blocks). `pool` is a device
// pointer, `pairs` host arrays of `count` block ids. Returns an empty string
// on success, else the failing call and the CUDA error.
std::string copy_blocks(std::byte* pool, std::size_t bytes_per_block,
                        const std::uint32_t* src, const std::uint32_t* dst, std::size_t count);

// Test helper: uploads `host_pool`, runs copy_blocks on the device and
// downloads the result into `host_pool`. Empty string on success.
std::string copy_blocks_on_device(std::byte* host_pool, std::size_t pool_bytes,
                                  std::size_t bytes_per_block, const std::uint32_t* src,
                                  const std::uint32_t* dst, std::size_t count);

} // namespace kvscope::kernels::cuda

#include "kernels/cuda/kv_write.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kv_device_codes.cuh"

namespace kvscope::kernels::cuda {
namespace detail {

Code device_code(cpu::KvElem elem) {
    switch (elem) {
    case cpu::KvElem::F32: return Code::F32;
    case cpu::KvElem::F16: return Code::F16;
    case cpu::KvElem::BF16: return Code::BF16;
    case cpu::KvElem::Fp8E4M3: return Code::Fp8;
    case cpu::KvElem::Int8: return Code::Int8;
    case cpu::KvElem::Int4: return Code::Int4;
    case cpu::KvElem::Int4Kivi:
    case cpu::KvElem::Int2Kivi: break;
    }
    throw std::invalid_argument("CUDA KV kernels: int4-kivi and int2-kivi are not supported on the GPU yet");
}

} // namespace detail

namespace {

using detail::Code;

constexpr unsigned kWarp = 32;
constexpr unsigned kRowsPerBlock = 4; // one warp per row
constexpr unsigned kFull = 0xFFFFFFFFu;

struct WriteParams {
    unsigned char* pool;
    std::size_t n_blocks, bytes_per_block;
    std::size_t offset[2]; // K, V
    std::size_t head_stride, slot_stride;
    cpu::KvScaleRegion scale[2];
    const float* fixed_scales; // fp8: n_kv_heads K scales then n_kv_heads V scales
    std::uint32_t block_size, n_kv_heads, head_dim;
    const float* src[2];
    const std::uint32_t* slots;
    std::uint32_t n_tokens;
};

__device__ float warp_max(float x) {
    for (unsigned o = kWarp / 2; o > 0; o /= 2)
        x = fmaxf(x, __shfl_xor_sync(kFull, x, o));
    return x;
}

__device__ float warp_min(float x) {
    for (unsigned o = kWarp / 2; o > 0; o /= 2)
        x = fminf(x, __shfl_xor_sync(kFull, x, o));
    return x;
}

__device__ void put_f16(unsigned char* p, float x) {
    *reinterpret_cast<unsigned short*>(p) = static_cast<unsigned short>(detail::float_to_f16_bits(x));
}

// int8, one warp per row: scale = max|x| / 127 over the row.
__device__ void store_int8(const float* x, unsigned n, unsigned char* row, unsigned char* scales, unsigned lane) {
    float amax = 0.0f;
    for (unsigned i = lane; i < n; i += kWarp)
        amax = fmaxf(amax, fabsf(x[i]));
    const float scale = detail::round_to_f16(warp_max(amax) / 127.0f);
    if (lane == 0)
        put_f16(scales, scale);
    for (unsigned i = lane; i < n; i += kWarp) {
        const float code = scale > 0.0f ? fminf(fmaxf(rintf(x[i] / scale), -127.0f), 127.0f) : 0.0f;
        row[i] = static_cast<unsigned char>(static_cast<signed char>(code));
    }
}

// int4, one warp per row: lane i of the warp holds value i of a group of
// 32; min and max over the group give (scale, zero); an even lane packs its
// code and its right neighbour's into one byte (value 2i in the low nibble).
__device__ void store_int4(const float* x, unsigned n, unsigned char* row, unsigned char* scales, unsigned lane) {
    for (unsigned first = 0, g = 0; first < n; first += detail::kGroup, ++g) {
        const unsigned i = first + lane;
        const bool valid = i < n;
        const float value = valid ? x[i] : 0.0f;
        const float lo = warp_min(valid ? value : INFINITY);
        const float hi = warp_max(valid ? value : -INFINITY);
        const float scale = detail::round_to_f16((hi - lo) / 15.0f);
        const float zero = detail::round_to_f16(lo);
        unsigned code = 0;
        if (scale > 0.0f)
            code = static_cast<unsigned>(fminf(fmaxf(rintf((value - zero) / scale), 0.0f), 15.0f));
        const unsigned high = __shfl_down_sync(kFull, code, 1);
        if (valid && lane % 2 == 0)
            row[i / 2] = static_cast<unsigned char>(code | (i + 1 < n ? high << 4 : 0u));
        if (lane == 0) {
            put_f16(scales + 4 * g, scale);
            put_f16(scales + 4 * g + 2, zero);
        }
    }
}

template <Code C>
__device__ void store_row(const float* x, unsigned n, unsigned char* row, unsigned char* scales, float fixed,
                          unsigned lane) {
    if constexpr (C == Code::Int8) {
        store_int8(x, n, row, scales, lane);
    } else if constexpr (C == Code::Int4) {
        store_int4(x, n, row, scales, lane);
    } else {
        for (unsigned i = lane; i < n; i += kWarp) {
            if constexpr (C == Code::F32)
                reinterpret_cast<float*>(row)[i] = x[i];
            else if constexpr (C == Code::F16)
                put_f16(row + 2 * i, x[i]);
            else if constexpr (C == Code::BF16)
                reinterpret_cast<unsigned short*>(row)[i] = static_cast<unsigned short>(detail::float_to_bf16_bits(x[i]));
            else
                row[i] = static_cast<unsigned char>(detail::float_to_e4m3(x[i] / fixed));
        }
    }
}

// Rows are (token, K or V, kv_head); one warp stores one row.
template <Code C>
__global__ void write_kv_kernel(WriteParams p) {
    const unsigned lane = threadIdx.x % kWarp;
    const std::size_t row_id = std::size_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / kWarp;
    if (row_id >= std::size_t{p.n_tokens} * 2 * p.n_kv_heads)
        return;
    const unsigned head = row_id % p.n_kv_heads;
    const unsigned part = row_id / p.n_kv_heads % 2; // 0: K, 1: V
    const std::size_t token = row_id / (2 * p.n_kv_heads);
    const std::uint32_t slot_id = p.slots[token];
    const std::size_t block = slot_id / p.block_size;
    const unsigned slot = slot_id % p.block_size;
    if (block >= p.n_blocks)
        return; // the engine checks slot mappings on the host; never write outside the pool
    unsigned char* base = p.pool + block * p.bytes_per_block;
    unsigned char* row = base + p.offset[part] + head * p.head_stride + slot * p.slot_stride;
    unsigned char* scales = base + p.scale[part].offset + head * p.scale[part].head_stride + slot * p.scale[part].slot_stride;
    const float fixed = C == Code::Fp8 ? p.fixed_scales[part * p.n_kv_heads + head] : 1.0f;
    const float* x = p.src[part] + (token * p.n_kv_heads + head) * p.head_dim;
    store_row<C>(x, p.head_dim, row, scales, fixed, lane);
}

void fail(const std::string& what) { throw std::invalid_argument("cuda::write_kv: " + what); }

// Every address a kernel stores a value or scale to must be a multiple of
// its width: 4 bytes for f32 values, 2 for f16/bf16 values and scales.
void check_alignment(const cpu::PagedKv& kv) {
    const std::size_t width = kv.elem == cpu::KvElem::F32 ? 4 : 2;
    const std::size_t numbers[] = {reinterpret_cast<std::uintptr_t>(kv.pool), kv.bytes_per_block, kv.k_offset,
                                   kv.v_offset, kv.head_stride, kv.slot_stride, kv.k_scale.offset,
                                   kv.k_scale.head_stride, kv.k_scale.slot_stride, kv.v_scale.offset,
                                   kv.v_scale.head_stride, kv.v_scale.slot_stride};
    for (const std::size_t n : numbers)
        if (n % width != 0)
            fail("the layout has an offset or stride of " + std::to_string(n) + " bytes, not a multiple of " +
                 std::to_string(width));
}

template <Code C>
void launch(const WriteParams& p, cudaStream_t stream) {
    const std::size_t rows = std::size_t{p.n_tokens} * 2 * p.n_kv_heads;
    const auto blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    write_kv_kernel<C><<<blocks, kRowsPerBlock * kWarp, 0, stream>>>(p);
}

} // namespace

void write_kv(const cpu::PagedKv& kv, const KvWriteBatch& batch, Stream stream) {
    cpu::check_paged_kv(kv);
    const Code code = detail::device_code(kv.elem);
    if (kv.head_dim > 256)
        fail("head_dim " + std::to_string(kv.head_dim) + " is over 256");
    check_alignment(kv);
    if (batch.n_tokens == 0)
        return;
    if (batch.k == nullptr || batch.v == nullptr || batch.slots == nullptr)
        fail("null K, V or slot mapping");
    WriteParams p{};
    p.pool = reinterpret_cast<unsigned char*>(kv.pool);
    p.n_blocks = kv.n_blocks;
    p.bytes_per_block = kv.bytes_per_block;
    p.offset[0] = kv.k_offset;
    p.offset[1] = kv.v_offset;
    p.head_stride = kv.head_stride;
    p.slot_stride = kv.slot_stride;
    p.scale[0] = kv.k_scale;
    p.scale[1] = kv.v_scale;
    p.fixed_scales = kv.fixed_scales;
    p.block_size = kv.block_size;
    p.n_kv_heads = kv.n_kv_heads;
    p.head_dim = kv.head_dim;
    p.src[0] = batch.k;
    p.src[1] = batch.v;
    p.slots = batch.slots;
    p.n_tokens = batch.n_tokens;
    const cudaStream_t s = detail::to_stream(stream);
    switch (code) {
    case Code::F32: launch<Code::F32>(p, s); break;
    case Code::F16: launch<Code::F16>(p, s); break;
    case Code::BF16: launch<Code::BF16>(p, s); break;
    case Code::Fp8: launch<Code::Fp8>(p, s); break;
    case Code::Int8: launch<Code::Int8>(p, s); break;
    case Code::Int4: launch<Code::Int4>(p, s); break;
    }
    detail::check_launch("write_kv_kernel");
}

} // namespace kvscope::kernels::cuda

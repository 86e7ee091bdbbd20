#include "kernels/cuda/kv_write.h"

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kv_device_codes.cuh"

namespace kvscope::kernels::cuda {
namespace detail {

RowCodes row_codes(cpu::KvElem elem) {
    switch (elem) {
    case cpu::KvElem::F32: return {Code::F32, Code::F32};
    case cpu::KvElem::F16: return {Code::F16, Code::F16};
    case cpu::KvElem::BF16: return {Code::BF16, Code::BF16};
    case cpu::KvElem::Fp8E4M3: return {Code::Fp8, Code::Fp8};
    case cpu::KvElem::Int8: return {Code::Int8, Code::Int8};
    case cpu::KvElem::Int4: return {Code::Int4, Code::Int4};
    case cpu::KvElem::Int4Kivi: return {Code::Int4Channels, Code::Int4};
    case cpu::KvElem::Int2Kivi: return {Code::Int2Channels, Code::Int2};
    }
    throw std::invalid_argument("CUDA KV kernels: unknown KV format");
}

} // namespace detail

namespace {

using detail::Code;

constexpr unsigned kWarp = 32;
constexpr unsigned kRowsPerBlock = 4; // one warp per row
constexpr unsigned kSealThreads = 128;
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
    // KIVI: each token's sequence tail and where this layer's rows are in it.
    std::byte* const* tails;
    std::size_t tail_offset[2];
    std::size_t tail_head_stride, tail_slot_stride;
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

// f16-exact (scale, zero) for codes 0..levels over [lo, hi], as the CPU's
// min_max_scale; and the code of x under them (asymmetric_code).
struct ScaleZero {
    float scale, zero;
};

__device__ ScaleZero min_max_scale(float lo, float hi, unsigned levels) {
    return {detail::round_to_f16((hi - lo) / static_cast<float>(levels)), detail::round_to_f16(lo)};
}

__device__ unsigned asymmetric_code(float x, ScaleZero sz, unsigned levels) {
    if (!(sz.scale > 0.0f))
        return 0;
    return static_cast<unsigned>(fminf(fmaxf(rintf((x - sz.zero) / sz.scale), 0.0f), static_cast<float>(levels)));
}

// int8, one warp per row: scale = max|x| / 127 over the row.
template <typename Values>
__device__ void store_int8(Values x, unsigned n, unsigned char* row, unsigned char* scales, unsigned lane) {
    float amax = 0.0f;
    for (unsigned i = lane; i < n; i += kWarp)
        amax = fmaxf(amax, fabsf(x(i)));
    const float scale = detail::round_to_f16(warp_max(amax) / 127.0f);
    if (lane == 0)
        put_f16(scales, scale);
    for (unsigned i = lane; i < n; i += kWarp) {
        const float code = scale > 0.0f ? fminf(fmaxf(rintf(x(i) / scale), -127.0f), 127.0f) : 0.0f;
        row[i] = static_cast<unsigned char>(static_cast<signed char>(code));
    }
}

// int4 and the KIVI values (Bits 4 or 2), one warp per row: lane i of the
// warp holds value i of a group of 32; min and max over the group give
// (scale, zero); the lane of each byte's first value packs its neighbours'
// codes with its own (value k of a byte in bits [Bits k, Bits (k + 1))).
template <unsigned Bits, typename Values>
__device__ void store_groups(Values x, unsigned n, unsigned char* row, unsigned char* scales, unsigned lane) {
    constexpr unsigned levels = (1u << Bits) - 1, per_byte = 8 / Bits;
    for (unsigned first = 0, g = 0; first < n; first += detail::kGroup, ++g) {
        const unsigned i = first + lane;
        const bool valid = i < n;
        const float value = valid ? x(i) : 0.0f;
        const ScaleZero sz = min_max_scale(warp_min(valid ? value : INFINITY), warp_max(valid ? value : -INFINITY), levels);
        const unsigned code = asymmetric_code(value, sz, levels);
        unsigned packed = code;
#pragma unroll
        for (unsigned k = 1; k < per_byte; ++k) {
            const unsigned next = __shfl_down_sync(kFull, code, k);
            if (i + k < n)
                packed |= next << (Bits * k);
        }
        if (valid && lane % per_byte == 0)
            row[i / per_byte] = static_cast<unsigned char>(packed);
        if (lane == 0) {
            put_f16(scales + 4 * g, sz.scale);
            put_f16(scales + 4 * g + 2, sz.zero);
        }
    }
}

template <Code C>
__device__ void store_row(const float* x, unsigned n, unsigned char* row, unsigned char* scales, float fixed,
                          unsigned lane) {
    const auto value = [x](unsigned i) { return x[i]; };
    if constexpr (C == Code::Int8) {
        store_int8(value, n, row, scales, lane);
    } else if constexpr (C == Code::Int4) {
        store_groups<4>(value, n, row, scales, lane);
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
struct RowJob {
    unsigned head, part;
    std::size_t token;
};

__device__ bool row_job(const WriteParams& p, RowJob& job) {
    const std::size_t row_id = std::size_t{blockIdx.x} * kRowsPerBlock + threadIdx.x / kWarp;
    if (row_id >= std::size_t{p.n_tokens} * 2 * p.n_kv_heads)
        return false;
    job = {static_cast<unsigned>(row_id % p.n_kv_heads), static_cast<unsigned>(row_id / p.n_kv_heads % 2),
           row_id / (2 * p.n_kv_heads)};
    return true;
}

template <Code C>
__global__ void write_kv_kernel(WriteParams p) {
    RowJob job;
    if (!row_job(p, job))
        return;
    const std::uint32_t slot_id = p.slots[job.token];
    const std::size_t block = slot_id / p.block_size;
    const unsigned slot = slot_id % p.block_size;
    if (block >= p.n_blocks)
        return; // the engine checks slot mappings on the host; never write outside the pool
    unsigned char* base = p.pool + block * p.bytes_per_block;
    const cpu::KvScaleRegion& sr = p.scale[job.part];
    unsigned char* row = base + p.offset[job.part] + job.head * p.head_stride + slot * p.slot_stride;
    unsigned char* scales = base + sr.offset + job.head * sr.head_stride + slot * sr.slot_stride;
    const float fixed = C == Code::Fp8 ? p.fixed_scales[job.part * p.n_kv_heads + job.head] : 1.0f;
    const float* x = p.src[job.part] + (job.token * p.n_kv_heads + job.head) * p.head_dim;
    store_row<C>(x, p.head_dim, row, scales, fixed, threadIdx.x % kWarp);
}

// KIVI, step 1: the token's K and V rows, in f16, into slot `slot` of its
// sequence's tail.
__global__ void write_tail_kernel(WriteParams p) {
    RowJob job;
    if (!row_job(p, job))
        return;
    const unsigned slot = p.slots[job.token] % p.block_size;
    unsigned char* row = reinterpret_cast<unsigned char*>(p.tails[job.token]) + p.tail_offset[job.part] +
                         job.head * p.tail_head_stride + slot * p.tail_slot_stride;
    const float* x = p.src[job.part] + (job.token * p.n_kv_heads + job.head) * p.head_dim;
    store_row<Code::F16>(x, p.head_dim, row, nullptr, 1.0f, threadIdx.x % kWarp);
}

// KIVI, step 2: a token in a block's last slot seals the block: one thread
// block per (token, KV head) quantizes the tail's rows into the pool block.
//   keys   per channel c over the block's slots: (scale, zero) from min and
//          max, codes packed along the row; one thread per byte of a row
//   values per slot, int4's groups with 2^Bits - 1 levels; one warp per slot
template <unsigned Bits>
__global__ void seal_block_kernel(WriteParams p) {
    constexpr unsigned levels = (1u << Bits) - 1, per_byte = 8 / Bits;
    const std::size_t token = blockIdx.x;
    const unsigned head = blockIdx.y;
    const std::uint32_t slot_id = p.slots[token];
    const std::size_t block = slot_id / p.block_size;
    if (slot_id % p.block_size != p.block_size - 1 || block >= p.n_blocks)
        return;
    const unsigned n = p.head_dim;
    const unsigned char* tail = reinterpret_cast<const unsigned char*>(p.tails[token]);
    const unsigned char* k_rows = tail + p.tail_offset[0] + head * p.tail_head_stride;
    const unsigned char* v_rows = tail + p.tail_offset[1] + head * p.tail_head_stride;
    unsigned char* base = p.pool + block * p.bytes_per_block;
    const auto tail_value = [&](const unsigned char* rows, unsigned s, unsigned c) {
        return detail::f16_bits_to_float(detail::load_u16(rows + s * p.tail_slot_stride + 2 * c));
    };

    unsigned char* k_out = base + p.offset[0] + head * p.head_stride;
    unsigned char* k_scales = base + p.scale[0].offset + head * p.scale[0].head_stride;
    for (unsigned byte = threadIdx.x; byte < n / per_byte; byte += blockDim.x) {
        ScaleZero sz[per_byte];
#pragma unroll
        for (unsigned k = 0; k < per_byte; ++k) {
            const unsigned c = byte * per_byte + k;
            float lo = tail_value(k_rows, 0, c), hi = lo;
            for (unsigned s = 1; s < p.block_size; ++s) {
                lo = fminf(lo, tail_value(k_rows, s, c));
                hi = fmaxf(hi, tail_value(k_rows, s, c));
            }
            sz[k] = min_max_scale(lo, hi, levels);
            put_f16(k_scales + 2 * c, sz[k].scale);
            put_f16(k_scales + 2 * (n + c), sz[k].zero);
        }
        for (unsigned s = 0; s < p.block_size; ++s) {
            unsigned packed = 0;
#pragma unroll
            for (unsigned k = 0; k < per_byte; ++k)
                packed |= asymmetric_code(tail_value(k_rows, s, byte * per_byte + k), sz[k], levels) << (Bits * k);
            k_out[s * p.slot_stride + byte] = static_cast<unsigned char>(packed);
        }
    }

    const unsigned lane = threadIdx.x % kWarp;
    for (unsigned s = threadIdx.x / kWarp; s < p.block_size; s += kSealThreads / kWarp) {
        const auto value = [&](unsigned c) { return tail_value(v_rows, s, c); };
        store_groups<Bits>(value, n, base + p.offset[1] + head * p.head_stride + s * p.slot_stride,
                           base + p.scale[1].offset + head * p.scale[1].head_stride + s * p.scale[1].slot_stride, lane);
    }
}

void fail(const std::string& what) { throw std::invalid_argument("cuda::write_kv: " + what); }

// Every address a kernel stores a value or scale to must be a multiple of
// its width: 4 bytes for f32 values, 2 for f16/bf16 values and scales.
void check_alignment(const cpu::PagedKv& kv) {
    const std::size_t width = kv.elem == cpu::KvElem::F32 ? 4 : 2;
    const std::size_t numbers[] = {reinterpret_cast<std::uintptr_t>(kv.pool), kv.bytes_per_block, kv.k_offset,
                                   kv.v_offset, kv.head_stride, kv.slot_stride, kv.k_scale.offset,
                                   kv.k_scale.head_stride, kv.k_scale.slot_stride, kv.v_scale.offset,
                                   kv.v_scale.head_stride, kv.v_scale.slot_stride, kv.tail.k_offset,
                                   kv.tail.v_offset, kv.tail.head_stride, kv.tail.slot_stride};
    for (const std::size_t n : numbers)
        if (n % width != 0)
            fail("the layout has an offset or stride of " + std::to_string(n) + " bytes, not a multiple of " +
                 std::to_string(width));
}

unsigned row_blocks(std::uint32_t n_tokens, std::uint32_t n_kv_heads) {
    return static_cast<unsigned>((std::size_t{n_tokens} * 2 * n_kv_heads + kRowsPerBlock - 1) / kRowsPerBlock);
}

template <Code C>
void launch(const WriteParams& p, cudaStream_t stream) {
    write_kv_kernel<C><<<row_blocks(p.n_tokens, p.n_kv_heads), kRowsPerBlock * kWarp, 0, stream>>>(p);
}

// KIVI writes in rounds, so that the GPU sees them in the CPU's order: a
// round ends before a token that would write a tail slot already written
// in it, or a tail whose block it seals. Within a round all tail rows are
// written first, then the full blocks sealed. A decode step is one round; a
// prefill chunk one per block it fills.
std::vector<std::pair<std::uint32_t, std::uint32_t>> kivi_rounds(const cpu::PagedKv& kv, const KvWriteBatch& batch) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> rounds;
    std::set<std::pair<const std::byte*, std::uint32_t>> written;
    std::set<const std::byte*> sealed;
    std::uint32_t first = 0;
    for (std::uint32_t i = 0; i < batch.n_tokens; ++i) {
        const std::byte* tail = batch.host_tails[i];
        const std::uint32_t slot = batch.host_slots[i] % kv.block_size;
        if (written.count({tail, slot}) || sealed.count(tail)) {
            rounds.emplace_back(first, i);
            first = i;
            written.clear();
            sealed.clear();
        }
        written.insert({tail, slot});
        if (slot + 1 == kv.block_size)
            sealed.insert(tail);
    }
    rounds.emplace_back(first, batch.n_tokens);
    return rounds;
}

void write_kivi(const cpu::PagedKv& kv, const KvWriteBatch& batch, WriteParams p, cudaStream_t stream) {
    if (batch.tails == nullptr || batch.host_slots == nullptr || batch.host_tails == nullptr)
        fail("a KIVI write needs each token's tail and host copies of the slots and tails");
    const dim3 threads(kRowsPerBlock * kWarp);
    for (const auto& [first, last] : kivi_rounds(kv, batch)) {
        WriteParams r = p;
        r.src[0] = batch.k + std::size_t{first} * kv.n_kv_heads * kv.head_dim;
        r.src[1] = batch.v + std::size_t{first} * kv.n_kv_heads * kv.head_dim;
        r.slots = batch.slots + first;
        r.tails = batch.tails + first;
        r.n_tokens = last - first;
        write_tail_kernel<<<row_blocks(r.n_tokens, kv.n_kv_heads), threads, 0, stream>>>(r);
        detail::check_launch("write_tail_kernel");
        const dim3 seal_grid(r.n_tokens, kv.n_kv_heads);
        if (kv.elem == cpu::KvElem::Int4Kivi)
            seal_block_kernel<4><<<seal_grid, kSealThreads, 0, stream>>>(r);
        else
            seal_block_kernel<2><<<seal_grid, kSealThreads, 0, stream>>>(r);
        detail::check_launch("seal_block_kernel");
    }
}

} // namespace

void write_kv(const cpu::PagedKv& kv, const KvWriteBatch& batch, Stream stream) {
    cpu::check_paged_kv(kv);
    if (kv.head_dim % 8 != 0 || kv.head_dim > 256)
        fail("head_dim " + std::to_string(kv.head_dim) + " must be a multiple of 8 and at most 256");
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
    p.tail_offset[0] = kv.tail.k_offset;
    p.tail_offset[1] = kv.tail.v_offset;
    p.tail_head_stride = kv.tail.head_stride;
    p.tail_slot_stride = kv.tail.slot_stride;
    const cudaStream_t s = detail::to_stream(stream);
    switch (detail::row_codes(kv.elem).k) {
    case Code::F32: launch<Code::F32>(p, s); break;
    case Code::F16: launch<Code::F16>(p, s); break;
    case Code::BF16: launch<Code::BF16>(p, s); break;
    case Code::Fp8: launch<Code::Fp8>(p, s); break;
    case Code::Int8: launch<Code::Int8>(p, s); break;
    case Code::Int4: launch<Code::Int4>(p, s); break;
    case Code::Int4Channels:
    case Code::Int2Channels: write_kivi(kv, batch, p, s); return;
    case Code::Int2: break; // only ever a V code
    }
    detail::check_launch("write_kv_kernel");
}

} // namespace kvscope::kernels::cuda

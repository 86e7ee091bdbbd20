#include "kernels/cpu/kv_write.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/kv_codes.h"
#include "kernels/cpu/kv_row_ops.h"
#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu {
namespace {

using detail::kKvGroup;
using detail::put_f16;
using detail::round_to_f16;

std::uint16_t f32_to_bf16(float value) {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    if (std::isnan(value)) // quiet, sign kept
        return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    return static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// ORs a `bits`-wide code into value i of a packed row (zeroed first).
void put_code(std::byte* row, std::size_t i, unsigned code, unsigned bits) {
    const std::size_t bit = i * bits;
    row[bit / 8] |= static_cast<std::byte>(code << (bit % 8));
}

// An asymmetric quantizer: x ~ code * scale + zero, both f16-exact.
struct ScaleZero {
    float scale, zero;
};

// The quantizer mapping [min, max] of values[0, n) (`stride` floats apart)
// onto codes 0..levels.
ScaleZero min_max_scale(const float* values, std::size_t n, std::size_t stride, unsigned levels) {
    float lo = values[0], hi = values[0];
    for (std::size_t i = 1; i < n; ++i) {
        lo = std::min(lo, values[i * stride]);
        hi = std::max(hi, values[i * stride]);
    }
    return {round_to_f16((hi - lo) / static_cast<float>(levels)), round_to_f16(lo)};
}

unsigned asymmetric_code(float x, ScaleZero sz, unsigned levels) {
    if (!(sz.scale > 0.0f))
        return 0;
    const float code = std::nearbyint((x - sz.zero) / sz.scale);
    return static_cast<unsigned>(std::clamp(code, 0.0f, static_cast<float>(levels)));
}

// int4 (bits 4) and the KIVI values (bits 4 or 2): one (scale, zero) per
// group of 32 values along the row.
void quantize_groups(const float* src, std::size_t n, unsigned bits, std::byte* row, std::byte* scales) {
    const unsigned levels = (1u << bits) - 1;
    std::memset(row, 0, (n * bits + 7) / 8);
    for (std::size_t first = 0, g = 0; first < n; first += kKvGroup, ++g) {
        const std::size_t count = std::min(kKvGroup, n - first);
        const ScaleZero sz = min_max_scale(src + first, count, 1, levels);
        put_f16(scales, 2 * g, sz.scale);
        put_f16(scales, 2 * g + 1, sz.zero);
        for (std::size_t i = first; i < first + count; ++i)
            put_code(row, i, asymmetric_code(src[i], sz, levels), bits);
    }
}

void quantize_int8(const float* src, std::size_t n, std::byte* row, std::byte* scales) {
    float amax = 0.0f;
    for (std::size_t i = 0; i < n; ++i)
        amax = std::max(amax, std::fabs(src[i]));
    const float scale = round_to_f16(amax / 127.0f);
    put_f16(scales, 0, scale);
    for (std::size_t i = 0; i < n; ++i) {
        const float code = scale > 0.0f ? std::clamp(std::nearbyint(src[i] / scale), -127.0f, 127.0f) : 0.0f;
        row[i] = static_cast<std::byte>(static_cast<std::int8_t>(code));
    }
}

void quantize_fp8(const float* src, std::size_t n, float scale, std::byte* row) {
    if (!(scale > 0.0f) || !std::isfinite(scale))
        throw std::invalid_argument("write_kv: fp8 head scale " + std::to_string(scale) + " is not positive");
    for (std::size_t i = 0; i < n; ++i)
        row[i] = static_cast<std::byte>(detail::encode_e4m3(src[i] / scale));
}

void store_row(KvElem elem, const float* src, std::size_t n, std::byte* row, std::byte* scales, const float* fixed_scale) {
    switch (elem) {
    case KvElem::F32: std::memcpy(row, src, 4 * n); return;
    case KvElem::F16: detail::store_f16_row(simd_path())(src, n, row); return;
    case KvElem::BF16:
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint16_t bits = f32_to_bf16(src[i]);
            std::memcpy(row + 2 * i, &bits, 2);
        }
        return;
    case KvElem::Fp8E4M3: quantize_fp8(src, n, *fixed_scale, row); return;
    case KvElem::Int8: quantize_int8(src, n, row, scales); return;
    case KvElem::Int4: quantize_groups(src, n, 4, row, scales); return;
    case KvElem::Int4Kivi:
    case KvElem::Int2Kivi: break; // sealed block by block (seal_block)
    }
    throw std::invalid_argument("write_kv: KIVI rows are written by sealing a block");
}

unsigned kivi_bits(KvElem elem) { return elem == KvElem::Int4Kivi ? 4 : 2; }

// KIVI keys of one head: per channel c, one (scale, zero) over the block's
// slots.
void seal_keys(const PagedKv& kv, std::byte* block, const float* keys, std::uint32_t head) {
    const std::size_t n = kv.head_dim;
    const unsigned bits = kivi_bits(kv.elem), levels = (1u << bits) - 1;
    std::byte* scales = block + kv.k_scale.offset + head * kv.k_scale.head_stride;
    std::byte* rows = block + kv.k_offset + head * kv.head_stride;
    for (std::uint32_t s = 0; s < kv.block_size; ++s)
        std::memset(rows + s * kv.slot_stride, 0, kv_row_value_bytes(kv.elem, kv.head_dim));
    for (std::size_t c = 0; c < n; ++c) {
        const ScaleZero sz = min_max_scale(keys + c, kv.block_size, n, levels);
        put_f16(scales, c, sz.scale);
        put_f16(scales, n + c, sz.zero);
        for (std::uint32_t s = 0; s < kv.block_size; ++s)
            put_code(rows + s * kv.slot_stride, c, asymmetric_code(keys[s * n + c], sz, levels), bits);
    }
}

// Quantizes a full tail block of this layer into pool block `block`.
void seal_block(const PagedKv& kv, std::uint32_t block, const std::byte* tail) {
    std::byte* base = kv.pool + block * kv.bytes_per_block;
    const std::size_t n = kv.head_dim;
    std::vector<float> k(std::size_t{kv.block_size} * n), v(n);
    for (std::uint32_t h = 0; h < kv.n_kv_heads; ++h) {
        const std::byte* k_rows = tail + kv.tail.k_offset + h * kv.tail.head_stride;
        const std::byte* v_rows = tail + kv.tail.v_offset + h * kv.tail.head_stride;
        for (std::uint32_t s = 0; s < kv.block_size; ++s)
            for (std::size_t i = 0; i < n; ++i)
                k[s * n + i] = detail::f16_at(k_rows + s * kv.tail.slot_stride, i);
        seal_keys(kv, base, k.data(), h);
        for (std::uint32_t s = 0; s < kv.block_size; ++s) {
            for (std::size_t i = 0; i < n; ++i)
                v[i] = detail::f16_at(v_rows + s * kv.tail.slot_stride, i);
            quantize_groups(v.data(), n, kivi_bits(kv.elem), base + kv.v_offset + h * kv.head_stride + s * kv.slot_stride,
                            base + kv.v_scale.offset + h * kv.v_scale.head_stride + s * kv.v_scale.slot_stride);
        }
    }
}

void write_tail(const PagedKv& kv, std::uint32_t slot, const float* k, const float* v, std::byte* tail) {
    for (std::uint32_t h = 0; h < kv.n_kv_heads; ++h) {
        const std::size_t row = h * kv.tail.head_stride + slot * kv.tail.slot_stride;
        store_row(KvElem::F16, k + std::size_t{h} * kv.head_dim, kv.head_dim, tail + kv.tail.k_offset + row, nullptr, nullptr);
        store_row(KvElem::F16, v + std::size_t{h} * kv.head_dim, kv.head_dim, tail + kv.tail.v_offset + row, nullptr, nullptr);
    }
}

} // namespace

void write_kv(const PagedKv& kv, std::uint32_t block, std::uint32_t slot, const float* k, const float* v,
              std::byte* tail) {
    check_paged_kv(kv);
    if (block >= kv.n_blocks || slot >= kv.block_size)
        throw std::invalid_argument("write_kv: block " + std::to_string(block) + " slot " +
                                    std::to_string(slot) + " outside a pool of " +
                                    std::to_string(kv.n_blocks) + " blocks of " +
                                    std::to_string(kv.block_size) + " slots");
    if (k == nullptr || v == nullptr)
        throw std::invalid_argument("write_kv: null K or V");
    if (kv_elem_seals_blocks(kv.elem)) {
        if (tail == nullptr)
            throw std::invalid_argument("write_kv: a KIVI write needs the sequence's tail");
        write_tail(kv, slot, k, v, tail);
        if (slot + 1 == kv.block_size)
            seal_block(kv, block, tail);
        return;
    }
    std::byte* base = kv.pool + block * kv.bytes_per_block;
    for (std::uint32_t h = 0; h < kv.n_kv_heads; ++h) {
        const std::size_t row = h * kv.head_stride + slot * kv.slot_stride;
        const float* k_scale = kv.fixed_scales ? kv.fixed_scales + h : nullptr;
        const float* v_scale = kv.fixed_scales ? kv.fixed_scales + kv.n_kv_heads + h : nullptr;
        store_row(kv.elem, k + std::size_t{h} * kv.head_dim, kv.head_dim, base + kv.k_offset + row,
                  base + kv.k_scale.offset + h * kv.k_scale.head_stride + slot * kv.k_scale.slot_stride, k_scale);
        store_row(kv.elem, v + std::size_t{h} * kv.head_dim, kv.head_dim, base + kv.v_offset + row,
                  base + kv.v_scale.offset + h * kv.v_scale.head_stride + slot * kv.v_scale.slot_stride, v_scale);
    }
}

} // namespace kvscope::kernels::cpu

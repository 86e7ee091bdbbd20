// Internal to the float tile kernels (packed_float*.cpp): the F16 and BF16
// tile layout's numbers and the per-instruction-set kernels.
//
// Every kernel computes each output with the same float operations in the
// same order, which is what makes them bit-identical (packed_kernel.h):
// per row lane and input, column c is added into chain c % 2 by
// one FMA, chain = w[c] * x[c] + chain (w widened exactly to float, x the
// activation as given), columns in increasing order, chains starting at
// +0; the output is chain 0 + chain 1. Two chains, not one, so that a
// single input (a decode step) keeps two FMAs in flight and the error
// stays within the sum's bound of cols / 2 roundings per chain.
#pragma once

#include <cstddef>
#include <utility>

#include "kernels/cpu/packed_kernel.h"

namespace kvscope::kernels::cpu::detail {

// Bytes of one tile column: one 2-byte value for each of the 16 rows.
inline constexpr std::size_t kFloatColumnBytes = kPackedRows * 2;

// Internal linkage (the unnamed namespace), as float16.h explains: each
// instruction set's file instantiates these with its own kernels.
namespace {

// The column walk of every instruction set's kernel, in the order above:
// out[j] = the dot products of the rows in one register with input j, for
// N inputs `act_stride` bytes apart. Rows supplies the register of rows
// (Reg), zero(), add(), fma(w, x, acc) = w * broadcast x + acc, and
// load(p): the column whose rows start at p, widened to float;
// `first_column` + c * kFloatColumnBytes is where column c starts.
template <typename Rows, std::size_t N>
void walk_columns(const std::byte* first_column, const std::byte* act, std::size_t act_stride, std::size_t cols,
                  typename Rows::Reg* out) {
    using Reg = typename Rows::Reg;
    const float* x[N];
    Reg even[N], odd[N];
    for (std::size_t j = 0; j < N; ++j) {
        x[j] = reinterpret_cast<const float*>(act + j * act_stride);
        even[j] = Rows::zero();
        odd[j] = Rows::zero();
    }
    std::size_t c = 0;
    for (; c + 2 <= cols; c += 2) {
        const Reg w0 = Rows::load(first_column + c * kFloatColumnBytes);
        const Reg w1 = Rows::load(first_column + (c + 1) * kFloatColumnBytes);
        for (std::size_t j = 0; j < N; ++j)
            even[j] = Rows::fma(w0, x[j][c], even[j]);
        for (std::size_t j = 0; j < N; ++j)
            odd[j] = Rows::fma(w1, x[j][c + 1], odd[j]);
    }
    if (c < cols) {
        const Reg w0 = Rows::load(first_column + c * kFloatColumnBytes);
        for (std::size_t j = 0; j < N; ++j)
            even[j] = Rows::fma(w0, x[j][c], even[j]);
    }
    for (std::size_t j = 0; j < N; ++j)
        out[j] = Rows::add(even[j], odd[j]);
}

// An instruction set's kernels for a type: Tile::template run<N> multiplies
// a tile by N inputs, N = 1..MaxInputs; `count` picks one.
template <typename Tile, std::size_t MaxInputs>
void gemm_any_count(const std::byte* tile, const std::byte* act, std::size_t act_stride, std::size_t count,
                    std::size_t cols, float* y, std::size_t y_stride, std::size_t rows) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        using Fn = void (*)(const std::byte*, const std::byte*, std::size_t, std::size_t, float*, std::size_t,
                            std::size_t);
        static constexpr Fn by_count[] = {Tile::template run<I + 1>...};
        by_count[count - 1](tile, act, act_stride, cols, y, y_stride, rows);
    }(std::make_index_sequence<MaxInputs>());
}

// Tile<Column> for a type, Column being the instruction set's F16 or BF16
// column decoder.
template <template <typename> class Tile, typename F16Column, typename Bf16Column, std::size_t MaxInputs>
PackedGemmFn float_gemm_fn(WeightType type) {
    switch (type) {
    case WeightType::F16: return {gemm_any_count<Tile<F16Column>, MaxInputs>, MaxInputs};
    case WeightType::BF16: return {gemm_any_count<Tile<Bf16Column>, MaxInputs>, MaxInputs};
    default: return {};
    }
}

} // namespace

#if defined(KVSCOPE_KERNELS_AVX512VNNI)
// zmm kernels: a column is one register of 16 rows.
PackedGemmFn avx512_float_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_AVX2)
// ymm kernels: a tile is two 8-row halves, each walked over all columns.
PackedGemmFn avx2_float_packed_gemm(WeightType type);
#endif
#if defined(KVSCOPE_KERNELS_NEON)
// AArch64 Advanced SIMD kernels, as the ymm ones: two 8-row halves.
PackedGemmFn neon_float_packed_gemm(WeightType type);
#endif

} // namespace kvscope::kernels::cpu::detail

// Internal to matmul: how each weight type is repacked into tiles of
// interleaved rows, and the tile kernels that multiply them.
//
// Why tiles: a row-by-row dot product ends every (row, input) pair with a
// horizontal sum, and a quantized weight block is decoded again for every
// few inputs. A tile holds the same block of kPackedRows rows side by side,
// so a 512-bit register carries a few values of each of 16 rows: one dpbusd
// (or FMA) advances 16 rows for one input, the sums stay in their lanes to
// the end of the row, and each block of the tile is decoded once for every
// input of the call. That is what lets a batch of inputs cost little more
// than one: the weight bytes are read and decoded once, and only the
// per-input multiply-adds grow.
//
// A tile covers kPackedRows whole rows (all `cols` values); the last tile of
// a matrix is padded with zero rows. Each type has one tile layout, read by
// every instruction set's kernel (the AVX2 kernels read a 16-row tile as two
// 8-row halves), documented next to its pack_tile. Tiles are a multiple of
// 64 bytes, so every tile of a PackedWeights starts on a cache line.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/cpu/row_dot.h"
#include "kernels/cpu/simd_path.h"
#include "kernels/cpu/weight_type.h"

namespace kvscope::kernels::cpu::detail {

inline constexpr std::size_t kPackedRows = 16;
inline constexpr std::size_t kPackedAlign = 64;

// The instruction sets with tile kernels. Within a SimdPath they are tried
// in order of preference (packed_isas).
enum class PackedIsa {
    Avx2,       // AVX2 + FMA + F16C (the SimdPath::Avx2 baseline)
    AvxVnni,    // + the VEX 256-bit dpbusd
    Avx512Vnni, // AVX-512 F, BW, DQ, VL + VNNI (512-bit dpbusd, 32 registers)
    Neon,       // AArch64 Advanced SIMD (SimdPath::Neon)
    NeonDot,    // + SDOT (SimdPath::NeonDot)
    NeonI8mm,   // + SMMLA (SimdPath::NeonI8mm)
};

// Whether this build and CPU run that instruction set's kernels.
bool packed_isa_available(PackedIsa isa);

// The instruction sets whose tile kernels a path may run, best first
// (empty for Scalar): the AVX2 path takes VNNI where the CPU has it, a
// NEON path its own extension and those below it.
std::span<const PackedIsa> packed_isas(SimdPath path);

// The tile layout of one weight type.
struct PackedLayout {
    // Bytes of one tile of kPackedRows rows of `cols` values: a multiple of
    // kPackedAlign, and no more than the GGUF rows' bytes plus 1/16 (decode
    // streams every byte once per step) before that rounding.
    std::size_t (*tile_bytes)(std::size_t cols);
    // Packs `rows` (1..kPackedRows) rows of a GGUF matrix, the first at
    // `w` and each `row_bytes` after the last, into `tile` (tile_bytes(cols)
    // bytes, 64-byte aligned). Rows from `rows` on become zero rows (zero
    // scales and codes), whose outputs no kernel writes.
    void (*pack_tile)(const std::byte* w, std::size_t row_bytes, std::size_t rows, std::size_t cols,
                      std::byte* tile);
    // The activation rows the kernels read (activation_quant.h).
    ActFormat act;
};

// y[i * y_stride + r] = dot(tile row r, activation row i) for r < rows
// (1..kPackedRows) and i < count (1..max_inputs); activation rows are
// `act_stride` bytes apart. Each output depends only on its own row and
// input: it is bit-identical whatever `count`, whichever other inputs share
// the call, and on every instruction set's kernel for the type (integer
// sums are exact, and the float operations per lane are the same ones in
// the same order).
using PackedGemm = void (*)(const std::byte* tile, const std::byte* act, std::size_t act_stride,
                            std::size_t count, std::size_t cols, float* y, std::size_t y_stride,
                            std::size_t rows);

struct PackedGemmFn {
    PackedGemm fn = nullptr; // null: no kernel for the type on that instruction set
    std::size_t max_inputs = 1;
};

// The layout of a type, or null when the type is not packed.
const PackedLayout* packed_layout(WeightType type);
// The kernel of a type on an instruction set; {} when there is none or the
// CPU lacks the instruction set.
PackedGemmFn packed_gemm(WeightType type, PackedIsa isa);
// The kernel matmul uses on a path: the best available instruction set's
// among packed_isas(path); {} when none has one for the type.
PackedGemmFn best_packed_gemm(WeightType type, SimdPath path);

// Each family of types supplies its layouts and kernels (one file per
// family, one more per instruction set). They return null / {} for types
// outside the family or instruction sets they have no kernel for; they do
// not check the CPU (packed_gemm does).
const PackedLayout* blocks32_packed_layout(WeightType type); // Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4
PackedGemmFn blocks32_packed_gemm(WeightType type, PackedIsa isa);
const PackedLayout* q4k_q5k_packed_layout(WeightType type); // Q4_K, Q5_K, IQ4_XS
PackedGemmFn q4k_q5k_packed_gemm(WeightType type, PackedIsa isa);
const PackedLayout* q2k_q3k_packed_layout(WeightType type); // Q2_K, Q3_K
PackedGemmFn q2k_q3k_packed_gemm(WeightType type, PackedIsa isa);
const PackedLayout* q6k_packed_layout(WeightType type); // Q6_K
PackedGemmFn q6k_packed_gemm(WeightType type, PackedIsa isa);
const PackedLayout* float_packed_layout(WeightType type); // F16, BF16
PackedGemmFn float_packed_gemm(WeightType type, PackedIsa isa);

} // namespace kvscope::kernels::cpu::detail

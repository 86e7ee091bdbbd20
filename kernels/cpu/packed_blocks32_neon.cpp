// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL,
// MXFP4) with baseline AArch64 Advanced SIMD, which has no byte dot
// product: the lanes kernel of packed_blocks32.h with each group's 4 byte
// products per row made by SMULL/SMLAL into int16 and pairwise added into
// int32 (SADALP). Every AArch64 CPU runs it; no compile flags.
#include "kernels/cpu/packed_blocks32.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

// Inputs per call: GCC 12 spills from 2 on (the products' registers, 8
// broadcast codes per quad and input), so more inputs share the decoding
// but cost more each. Per 16 rows x 32 values x input (objdump): Q4_0 216
// at 1 input, 206 at 2, 259 at 3; Q8_0 220, 225, 247; MXFP4 260, 243, 279.
constexpr std::size_t kMaxInputs = 2;

// A quad's sums live in two registers: [0] holds rows 0 and 1, [1] rows
// 2 and 3, each row's sum split over two lanes (products 0+1 and 2+3 of
// each group), added pairwise at the end. Groups k and k + 4 share one
// int16 product register: |code x a| <= 128 x 127 (signed codes,
// activations in -127..127), so two add to at most 32512.
struct MullDot {
    struct Acc {
        int32x4_t pairs[2];
        std::int32_t init;
    };
    static Acc start(std::int32_t init) { return {{vdupq_n_s32(0), vdupq_n_s32(0)}, init}; }
    template <std::size_t K>
    static void line(Acc& acc, uint8x16_t lo, uint8x16_t hi, const int8x16_t (&x)[2]) {
        // The input's 4 codes of group K, and of K + 4, in every lane.
        const int8x16_t xlo = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x[0]), K));
        const int8x16_t xhi = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x[1]), K));
        const int8x16_t wlo = vreinterpretq_s8_u8(lo), whi = vreinterpretq_s8_u8(hi);
        const int16x8_t rows01 =
            vmlal_s8(vmull_s8(vget_low_s8(wlo), vget_low_s8(xlo)), vget_low_s8(whi), vget_low_s8(xhi));
        const int16x8_t rows23 = vmlal_high_s8(vmull_high_s8(wlo, xlo), whi, xhi);
        acc.pairs[0] = vpadalq_s16(acc.pairs[0], rows01);
        acc.pairs[1] = vpadalq_s16(acc.pairs[1], rows23);
    }
    static int32x4_t total(const Acc& acc) {
        return vaddq_s32(vpaddq_s32(acc.pairs[0], acc.pairs[1]), vdupq_n_s32(acc.init));
    }
};

} // namespace

PackedGemmFn neon_packed_gemm(WeightType type) {
    return neon_packed_gemm_of<LanesHalf<MullDot>::template Of, kMaxInputs>(type);
}

} // namespace kvscope::kernels::cpu::detail::blocks32

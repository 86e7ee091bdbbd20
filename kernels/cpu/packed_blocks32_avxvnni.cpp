// The blocks-of-32 tile kernels (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL,
// MXFP4) with AVX-VNNI's 256-bit
// dpbusd: the kernel of packed_blocks32.h, one dpbusd per group of 4
// values, 8 rows and input. This file alone is compiled with -mavxvnni;
// packed_gemm calls it only on CPUs that report AVX-VNNI.
#include <immintrin.h>

#include "kernels/cpu/packed_blocks32.h"

namespace kvscope::kernels::cpu::detail::blocks32 {
namespace {

struct VnniDot {
    template <WeightType T>
    static __m256i start(std::int32_t act_sum) {
        return _mm256_set1_epi32(-code_offset(T) * act_sum);
    }
    template <WeightType>
    static __m256i dot(__m256i acc, __m256i w, __m256i a) {
        return _mm256_dpbusd_avx_epi32(acc, w, a);
    }
};

} // namespace

PackedGemmFn avxvnni_packed_gemm(WeightType type) { return ymm_packed_gemm<VnniDot>(type); }

} // namespace kvscope::kernels::cpu::detail::blocks32

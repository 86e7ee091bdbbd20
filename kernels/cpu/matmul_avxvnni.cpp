// The blocks-of-32 row dot products (Q8_0, Q4_0, Q5_0, MXFP4) with AVX-VNNI's
// dpbusd, which turns 32 byte products into 8 int32 sums in one instruction
// where AVX2 needs two (maddubs, madd). This file alone is compiled with
// -mavxvnni; matmul.cpp calls it only on CPUs that report AVX-VNNI, within
// the AVX2 path, since the results are bit-identical (blocks32_dot.h).
#include <immintrin.h>

#include "kernels/cpu/blocks32_dot.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/row_dot.h"

namespace kvscope::kernels::cpu::detail {
namespace {

struct VnniDot {
    static __m256i sums(__m256i u, __m256i s) {
        return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
    }
};

} // namespace

RowDot avxvnni_row_dot(WeightType type) {
    if (!cpu_features().avx_vnni)
        return nullptr;
    switch (type) {
    case WeightType::Q8_0: return single_input<multi_q8_0<VnniDot>>;
    case WeightType::Q4_0: return single_input<multi_q4_0<VnniDot>>;
    case WeightType::Q5_0: return single_input<multi_q5_0<VnniDot>>;
    case WeightType::MXFP4: return single_input<multi_mxfp4<VnniDot>>;
    default: return nullptr;
    }
}

RowDotMultiFn avxvnni_row_dot_multi(WeightType type) {
    if (!cpu_features().avx_vnni)
        return {};
    switch (type) {
    case WeightType::Q8_0: return {multi_q8_0<VnniDot>, 4};
    case WeightType::Q4_0: return {multi_q4_0<VnniDot>, 4};
    case WeightType::Q5_0: return {multi_q5_0<VnniDot>, 4};
    case WeightType::MXFP4: return {multi_mxfp4<VnniDot>, 4};
    default: return {};
    }
}

} // namespace kvscope::kernels::cpu::detail

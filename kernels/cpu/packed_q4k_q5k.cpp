// SCAFFOLD (replaced by the family's layouts and kernels before merging).
#include "kernels/cpu/packed_kernel.h"

namespace kvscope::kernels::cpu::detail {

const PackedLayout* q4k_q5k_packed_layout(WeightType) { return nullptr; }
PackedGemmFn q4k_q5k_packed_gemm(WeightType, PackedIsa) { return {}; }

} // namespace kvscope::kernels::cpu::detail

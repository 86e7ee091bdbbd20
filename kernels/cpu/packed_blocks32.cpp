// SCAFFOLD (replaced by the family's layouts and kernels before merging).
#include "kernels/cpu/packed_kernel.h"

namespace kvscope::kernels::cpu::detail {

const PackedLayout* blocks32_packed_layout(WeightType) { return nullptr; }
PackedGemmFn blocks32_packed_gemm(WeightType, PackedIsa) { return {}; }

} // namespace kvscope::kernels::cpu::detail

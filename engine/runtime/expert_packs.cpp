#include "engine/runtime/expert_packs.h"

#include <stdexcept>

namespace kvscope {

ExpertPacks::ExpertPacks(const GgufFile& file, std::size_t matrices)
    : file_(file), matrices_(matrices), once_(std::make_unique<std::once_flag[]>(matrices)),
      packed_(std::make_unique<kernels::cpu::PackedWeights[]>(matrices)) {}

WeightMatrix ExpertPacks::get(std::size_t index, const WeightMatrix& m, int threads) const {
    if (index >= matrices_)
        throw std::out_of_range("expert matrix " + std::to_string(index) + " of " + std::to_string(matrices_));
    // The packed copies are logically part of the weights, which callers
    // see as const: packing is a cache fill, done once per matrix.
    std::call_once(once_[index], [&] {
        kernels::cpu::PackedWeights p = kernels::cpu::PackedWeights::pack(m.type, m.data, m.rows, m.cols, threads);
        if (!p)
            return;
        bytes_ += p.bytes();
        ++count_;
        packed_[index] = std::move(p);
        file_.release_pages(m.data, m.rows * m.row_bytes);
    });
    WeightMatrix view = m;
    if (packed_[index])
        view.packed = &packed_[index];
    return view;
}

} // namespace kvscope

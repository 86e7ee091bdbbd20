#include "engine/runtime/model.h"

#include "engine/core/log.h"
#include "kernels/cpu/parallel.h"

namespace kvscope {
namespace {

namespace cpu = kernels::cpu;

// Sets m.packed to a new packed copy of m, kept in `store`, when the CPU
// has tile kernels for its type.
void pack(WeightMatrix& m, std::deque<cpu::PackedWeights>& store, int threads) {
    cpu::PackedWeights packed = cpu::PackedWeights::pack(m.type, m.data, m.rows, m.cols, threads);
    if (!packed)
        return;
    store.push_back(std::move(packed));
    m.packed = &store.back();
}

} // namespace

Model::Model(const std::string& path)
    : file_(path), config_(read_model_config(file_)), weights_(file_, config_) {}

const ModelWeights& Model::cpu_weights(int threads) const {
    std::call_once(pack_once_, [this, threads] {
        auto packed = std::make_unique<CpuWeights>(CpuWeights{{}, weights_});
        // token_embd is only read a row at a time (the embedding lookup)
        // unless it is also the output matrix, which `output` then packs.
        pack(packed->weights.output, packed->packed, cpu::resolve_threads(threads));
        for (LayerWeights& w : packed->weights.layers)
            for (WeightMatrix* m : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down})
                pack(*m, packed->packed, cpu::resolve_threads(threads));
        std::size_t bytes = 0;
        for (const cpu::PackedWeights& p : packed->packed)
            bytes += p.bytes();
        logger("engine")->info("CPU weights: {} matrices, {:.1f} MiB, packed into tiles", packed->packed.size(),
                               static_cast<double>(bytes) / (1 << 20));
        cpu_ = std::move(packed);
    });
    return cpu_->weights;
}

} // namespace kvscope

#include "engine/runtime/model.h"

#include "engine/core/log.h"
#include "kernels/cpu/parallel.h"

namespace kvscope {
namespace {

namespace cpu = kernels::cpu;

// Sets m.packed to a new packed copy of m, kept in `store`, when the CPU
// has tile kernels for its type, and lets the OS drop the file's pages of
// m (the CPU reads the copy from now on; anything else that reads m, the
// portable path or a CUDA upload, finds them again in the page cache).
// Returns the bytes of file pages dropped.
std::size_t pack(WeightMatrix& m, std::deque<cpu::PackedWeights>& store, int threads, const GgufFile& file) {
    cpu::PackedWeights packed = cpu::PackedWeights::pack(m.type, m.data, m.rows, m.cols, threads);
    if (!packed)
        return 0;
    store.push_back(std::move(packed));
    m.packed = &store.back();
    return file.release_pages(m.data, m.rows * m.row_bytes);
}

} // namespace

Model::Model(const std::string& path)
    : file_(path), config_(read_model_config(file_)), weights_(file_, config_) {}

const ModelWeights& Model::cpu_weights(int threads) const {
    std::call_once(pack_once_, [this, threads] {
        auto packed = std::make_unique<CpuWeights>(CpuWeights{{}, weights_, nullptr});
        // token_embd is only read a row at a time (the embedding lookup)
        // unless it is also the output matrix, which `output` then packs.
        const int workers = cpu::resolve_threads(threads);
        std::size_t released = pack(packed->weights.output, packed->packed, workers, file_);
        for (LayerWeights& w : packed->weights.layers)
            for (WeightMatrix* m : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down, &w.experts.router})
                if (m->data != nullptr) // a dense model's experts, a MoE model's dense FFN
                    released += pack(*m, packed->packed, workers, file_);
        if (config_.is_moe()) {
            const std::size_t matrices = expert_matrix_index(config_.n_layers, 0, 0, config_.experts.count);
            packed->experts = std::make_unique<ExpertPacks>(file_, matrices);
            packed->weights.expert_packs = packed->experts.get();
        }
        std::size_t bytes = 0;
        for (const cpu::PackedWeights& p : packed->packed)
            bytes += p.bytes();
        logger("engine")->info("CPU weights: {} matrices, {:.1f} MiB, packed into tiles ({:.1f} MiB of the file's "
                               "pages released)",
                               packed->packed.size(), static_cast<double>(bytes) / (1 << 20),
                               static_cast<double>(released) / (1 << 20));
        cpu_ = std::move(packed);
    });
    return cpu_->weights;
}

} // namespace kvscope

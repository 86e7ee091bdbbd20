#include "kernels/cpu/packed_weights.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/os_memory.h"
#include "kernels/cpu/packed_kernel.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/simd_path.h"

namespace kvscope::kernels::cpu {
namespace {

// Memory for a packed matrix. One of at least a huge page (2 MiB on x86;
// huge_page_size(), 0 where there are none) starts on one and asks for
// transparent huge pages over its whole huge pages (where the system's THP
// setting is "madvise" or "always"): a decode step streams every tile
// once, and with 4 KiB pages each 4 KiB costs a TLB miss, a page walk that
// a VM nests in the host's. Measured, tinyllama-1.1b Q8_0 (1.1 GiB of
// tiles), one sequence decoding 128 tokens, 3 alternating runs each: 27.0,
// 19.2, 26.7 tok/s with 4 KiB pages, 35.0, 35.7, 29.6 with this. No more
// memory is touched: the last, partial huge page of each matrix is left
// to small pages (rounding it up measured ~6% faster but touches up to
// 2 MiB more per matrix).
std::byte* allocate_tiles(std::size_t bytes) {
    const std::size_t huge = huge_page_size();
    const bool advise = huge != 0 && bytes >= huge;
    void* data = nullptr;
    if (posix_memalign(&data, advise ? huge : detail::kPackedAlign, bytes) != 0)
        throw std::bad_alloc();
    if (advise)
        advise_huge_pages(data, bytes / huge * huge); // a hint: failure changes nothing
    return static_cast<std::byte*>(data);
}

} // namespace

namespace detail {

bool packed_isa_available(PackedIsa isa) {
    const CpuFeatures& cpu = cpu_features();
    switch (isa) {
    case PackedIsa::Avx2: return simd_path_available(SimdPath::Avx2);
    case PackedIsa::AvxVnni: return simd_path_available(SimdPath::Avx2) && cpu.avx_vnni;
    case PackedIsa::Avx512Vnni: return simd_path_available(SimdPath::Avx2) && cpu.avx512_vnni;
    case PackedIsa::Neon: return simd_path_available(SimdPath::Neon);
    case PackedIsa::NeonDot: return simd_path_available(SimdPath::NeonDot);
    case PackedIsa::NeonI8mm: return simd_path_available(SimdPath::NeonI8mm);
    }
    return false;
}

std::span<const PackedIsa> packed_isas(SimdPath path) {
    static constexpr PackedIsa kX86[] = {PackedIsa::Avx512Vnni, PackedIsa::AvxVnni, PackedIsa::Avx2};
    static constexpr PackedIsa kArm[] = {PackedIsa::NeonI8mm, PackedIsa::NeonDot, PackedIsa::Neon};
    switch (path) {
    case SimdPath::Scalar: return {};
    case SimdPath::Avx2: return kX86;
    case SimdPath::Neon: return std::span(kArm).subspan(2);
    case SimdPath::NeonDot: return std::span(kArm).subspan(1);
    case SimdPath::NeonI8mm: return kArm;
    }
    return {};
}

const PackedLayout* packed_layout(WeightType type) {
    for (const auto family : {blocks32_packed_layout, q4k_q5k_packed_layout, q2k_q3k_packed_layout, q6k_packed_layout,
                              float_packed_layout})
        if (const PackedLayout* layout = family(type))
            return layout;
    return nullptr;
}

PackedGemmFn packed_gemm(WeightType type, PackedIsa isa) {
    if (!packed_isa_available(isa))
        return {};
    for (const auto family : {blocks32_packed_gemm, q4k_q5k_packed_gemm, q2k_q3k_packed_gemm, q6k_packed_gemm,
                              float_packed_gemm})
        if (const PackedGemmFn gemm = family(type, isa); gemm.fn != nullptr)
            return gemm;
    return {};
}

namespace {

PackedGemmFn find_best_packed_gemm(WeightType type, SimdPath path) {
    for (const PackedIsa isa : packed_isas(path))
        if (const PackedGemmFn gemm = packed_gemm(type, isa); gemm.fn != nullptr)
            return gemm;
    return {};
}

} // namespace

PackedGemmFn best_packed_gemm(WeightType type, SimdPath path) {
    // matmul asks for every packed job of every call; the answer depends only
    // on the type, the path and the CPU, so it is worked out once per process.
    constexpr std::size_t kTypes = static_cast<std::size_t>(std::ranges::max(kWeightTypes)) + 1;
    constexpr std::size_t kPaths = static_cast<std::size_t>(SimdPath::NeonI8mm) + 1;
    using Table = std::array<std::array<PackedGemmFn, kTypes>, kPaths>;
    static const Table table = [] {
        Table best{};
        for (std::size_t p = 0; p < kPaths; ++p)
            for (std::size_t raw = 0; raw < kTypes; ++raw)
                if (is_weight_type(static_cast<std::uint32_t>(raw)))
                    best[p][raw] = find_best_packed_gemm(static_cast<WeightType>(raw), static_cast<SimdPath>(p));
        return best;
    }();
    const auto raw = static_cast<std::size_t>(type);
    const auto p = static_cast<std::size_t>(path);
    return raw < kTypes && p < kPaths ? table[p][raw] : PackedGemmFn{};
}

} // namespace detail

void PackedWeights::FreeAligned::operator()(std::byte* p) const { std::free(p); }

PackedWeights PackedWeights::pack(WeightType type, const void* W, std::size_t rows, std::size_t cols,
                                  int threads) {
    const std::size_t row_bytes = weight_row_bytes(type, cols); // throws for a bad cols
    if (W == nullptr)
        throw std::invalid_argument("PackedWeights::pack: null weights");
    const detail::PackedLayout* layout = detail::packed_layout(type);
    if (layout == nullptr || detail::best_packed_gemm(type, best_simd_path()).fn == nullptr || rows == 0 || cols == 0)
        return {};
    PackedWeights packed;
    packed.type_ = type;
    packed.rows_ = rows;
    packed.cols_ = cols;
    packed.tiles_ = (rows + detail::kPackedRows - 1) / detail::kPackedRows;
    packed.tile_bytes_ = layout->tile_bytes(cols);
    std::byte* data = allocate_tiles(packed.bytes());
    packed.data_.reset(data);
    const auto* w = static_cast<const std::byte*>(W);
    detail::parallel_for(packed.tiles_, threads, detail::Schedule::Even, [&](std::size_t t, int) {
        const std::size_t first = t * detail::kPackedRows;
        const std::size_t count = std::min(detail::kPackedRows, rows - first);
        layout->pack_tile(w + first * row_bytes, row_bytes, count, cols, data + t * packed.tile_bytes_);
    });
    return packed;
}

} // namespace kvscope::kernels::cpu

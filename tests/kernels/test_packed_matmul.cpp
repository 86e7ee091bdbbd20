// Packed weights (packed_weights.h) and the tile kernels that read them
// (packed_kernel.h), for every type that has them: against the same
// double-precision reference and tolerances as the row kernels
// (weight_matrices.h), and for the promises the engine relies on: an
// output does not depend on the other inputs of the call, the thread
// count or the instruction set, and the packed copy is no bigger than the
// file's rows (a decode step streams it whole).
#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed_kernel.h"
#include "kernels/cpu/packed_weights.h"
#include "weight_matrices.h"

using namespace kvscope::kernels::cpu;
using namespace kernel_test;

Q_DECLARE_METATYPE(kvscope::kernels::cpu::WeightType)

namespace {

constexpr int kThreads = 2;

constexpr detail::PackedIsa kIsas[] = {detail::PackedIsa::Avx2, detail::PackedIsa::AvxVnni,
                                       detail::PackedIsa::Avx512Vnni, detail::PackedIsa::Neon,
                                       detail::PackedIsa::NeonDot, detail::PackedIsa::NeonI8mm};

const char* isa_name(detail::PackedIsa isa) {
    switch (isa) {
    case detail::PackedIsa::Avx2: return "avx2";
    case detail::PackedIsa::AvxVnni: return "avx-vnni";
    case detail::PackedIsa::Avx512Vnni: return "avx512-vnni";
    case detail::PackedIsa::Neon: return "neon";
    case detail::PackedIsa::NeonDot: return "neon-dotprod";
    case detail::PackedIsa::NeonI8mm: return "neon-i8mm";
    }
    return "?";
}

// Y = X W^T through the packed copy, on the AVX2 path.
std::vector<float> packed_matmul(const Matrix& m, const PackedWeights& packed, const std::vector<float>& X,
                                 std::size_t n, int threads) {
    std::vector<float> Y(n * m.rows, std::nanf(""));
    const MatmulJob job{m.type, m.bytes.data(), m.rows, Y.data(), &packed};
    matmuls({&job, 1}, m.cols, X.data(), n, threads);
    return Y;
}

// The activation rows a packed kernel reads, prepared as matmul does.
std::vector<std::byte> prepare(detail::ActFormat format, const std::vector<float>& X, std::size_t cols) {
    const std::size_t n = X.size() / cols, row_bytes = detail::act_row_bytes(format, cols);
    std::vector<std::byte> out(n * row_bytes);
    for (std::size_t i = 0; i < n; ++i) {
        const float* x = X.data() + i * cols;
        std::byte* row = out.data() + i * row_bytes;
        switch (format) {
        case detail::ActFormat::Q8x32Sums:
            detail::quantize_act32_sum(x, cols, reinterpret_cast<detail::ActBlock32Sum*>(row), best_simd_path());
            break;
        case detail::ActFormat::Q8x256:
            detail::quantize_act256(x, cols, reinterpret_cast<detail::ActBlock256*>(row), best_simd_path());
            break;
        case detail::ActFormat::F32: std::memcpy(row, x, cols * sizeof(float)); break;
        default: QTest::qFail("a format no packed layout reads", __FILE__, __LINE__);
        }
    }
    return out;
}

// Y = X W^T with one instruction set's kernel called directly, every tile
// and group of inputs.
std::vector<float> isa_matmul(const detail::PackedGemmFn& gemm, const PackedWeights& packed,
                              const std::vector<std::byte>& act, std::size_t stride, std::size_t n) {
    std::vector<float> Y(n * packed.rows(), std::nanf(""));
    for (std::size_t t = 0; t < packed.tiles(); ++t) {
        const std::size_t r = t * detail::kPackedRows, rows = std::min(detail::kPackedRows, packed.rows() - r);
        for (std::size_t i = 0; i < n; i += gemm.max_inputs)
            gemm.fn(packed.tile(t), act.data() + i * stride, stride, std::min(gemm.max_inputs, n - i), packed.cols(),
                    Y.data() + i * packed.rows() + r, packed.rows(), rows);
    }
    return Y;
}

bool has_packed_kernel(WeightType type) {
    return detail::best_packed_gemm(type, best_simd_path()).fn != nullptr;
}

// Every type: those without a tile kernel here skip.
void add_packed_type_rows() {
    QTest::addColumn<WeightType>("type");
    for (const WeightType type : kAllTypes)
        QTest::newRow(to_string(type).data()) << type;
}

} // namespace

class TestPackedMatmul : public QObject {
    Q_OBJECT
private slots:
    void packs_what_has_kernels();
    void matches_reference_data() { add_packed_type_rows(); }
    void matches_reference();
    void exact_activations_leave_only_rounding_data() { add_packed_type_rows(); }
    void exact_activations_leave_only_rounding();
    void outputs_do_not_depend_on_the_batch_data() { add_packed_type_rows(); }
    void outputs_do_not_depend_on_the_batch();
    void every_instruction_set_gives_the_same_bits_data() { add_packed_type_rows(); }
    void every_instruction_set_gives_the_same_bits();
    void float_rows_of_any_length();
    void mxfp4_scales_exact_for_every_exponent();
    void matmuls_mix_packed_and_plain_jobs();
    void scalar_path_reads_the_file_layout();
    void rejects_packed_weights_of_another_shape();
    void activation_block_sums_are_their_codes_sums();
};

void TestPackedMatmul::packs_what_has_kernels() {
    std::mt19937 rng(1);
    for (const WeightType type : kAllTypes) {
        const Matrix m = random_matrix(type, 37, 512, rng);
        const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), m.rows, m.cols, kThreads);
        QCOMPARE(static_cast<bool>(packed), has_packed_kernel(type));
        if (!packed)
            continue;
        QCOMPARE(packed.tiles(), std::size_t{3});
        QCOMPARE(reinterpret_cast<std::uintptr_t>(packed.tile(1)) % detail::kPackedAlign, std::uintptr_t{0});
        // No more than the file's rows plus 1/16, before rounding each tile
        // up to a cache line (the layout's promise).
        const std::size_t file_tile = detail::kPackedRows * weight_row_bytes(type, m.cols);
        QVERIFY2(packed.tile_bytes() <= file_tile + file_tile / 16 + detail::kPackedAlign, to_string(type).data());
    }
}

void TestPackedMatmul::matches_reference() {
    QFETCH(WeightType, type);
    if (!has_packed_kernel(type))
        QSKIP("no tile kernel for this type on this build or CPU");
    std::mt19937 rng(static_cast<unsigned>(type) + 10);
    // 16 rows: one whole tile; 37: a padded last tile; 300 x 768: threaded.
    for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{16, 256}, {37, 512}, {300, 768}}) {
        const Matrix m = random_matrix(type, rows, cols, rng);
        const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), rows, cols, kThreads);
        for (const std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{70}}) {
            const std::vector<float> X = random_activations(n * cols, rng);
            const std::vector<float> Y = packed_matmul(m, packed, X, n, kThreads);
            for (std::size_t i = 0; i < n; ++i)
                check_against_reference(m, X.data() + i * cols, Y.data() + i * rows, i);
        }
    }
}

void TestPackedMatmul::exact_activations_leave_only_rounding() {
    // Activations exact in 8 bits: any slip in unpacking a weight bit, a
    // scale or an offset shows beyond the rounding bound.
    QFETCH(WeightType, type);
    if (!has_packed_kernel(type))
        QSKIP("no tile kernel for this type on this build or CPU");
    std::mt19937 rng(static_cast<unsigned>(type) + 20);
    const Matrix m = random_matrix(type, 40, 512, rng);
    const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), m.rows, m.cols, kThreads);
    const std::size_t n = 3;
    const std::vector<float> X = exact_activations(n * m.cols, rng);
    const std::vector<float> Y = packed_matmul(m, packed, X, n, kThreads);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t r = 0; r < m.rows; ++r) {
            const Expected e = expected_dot(m, r, X.data() + i * m.cols);
            const float y = Y[i * m.rows + r];
            QVERIFY2(std::fabs(y - e.value) <= e.rounding(m.cols),
                     qPrintable(QStringLiteral("input %1 row %2: got %3, expected %4")
                                    .arg(i).arg(r).arg(static_cast<double>(y), 0, 'g', 9).arg(e.value, 0, 'g', 9)));
        }
}

void TestPackedMatmul::outputs_do_not_depend_on_the_batch() {
    // A sequence's logits must not depend on which others decode with it,
    // nor on the thread count: every n, every grouping of the inputs into
    // kernel calls and tiles, bit for bit.
    QFETCH(WeightType, type);
    if (!has_packed_kernel(type))
        QSKIP("no tile kernel for this type on this build or CPU");
    std::mt19937 rng(static_cast<unsigned>(type) + 30);
    const Matrix m = random_matrix(type, 50, 512, rng);
    const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), m.rows, m.cols, kThreads);
    const std::size_t n = 75; // more than one tile of inputs, and a remainder in each group
    const std::vector<float> X = random_activations(n * m.cols, rng);
    const std::vector<float> all = packed_matmul(m, packed, X, n, kThreads);
    QVERIFY(packed_matmul(m, packed, X, n, 1) == all);
    for (const std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{9}}) {
        const std::vector<float> head(X.begin(), X.begin() + static_cast<std::ptrdiff_t>(count * m.cols));
        const std::vector<float> Y = packed_matmul(m, packed, head, count, kThreads);
        QVERIFY2(std::memcmp(Y.data(), all.data(), Y.size() * sizeof(float)) == 0,
                 qPrintable(QStringLiteral("the first %1 inputs alone").arg(count)));
    }
}

void TestPackedMatmul::every_instruction_set_gives_the_same_bits() {
    QFETCH(WeightType, type);
    if (!has_packed_kernel(type))
        QSKIP("no tile kernel for this type on this build or CPU");
    std::mt19937 rng(static_cast<unsigned>(type) + 40);
    const Matrix m = random_matrix(type, 21, 768, rng);
    const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), m.rows, m.cols, kThreads);
    const detail::PackedLayout* layout = detail::packed_layout(type);
    const std::size_t n = 11;
    const std::vector<float> X = random_activations(n * m.cols, rng);
    const std::vector<std::byte> act = prepare(layout->act, X, m.cols);
    const std::size_t stride = detail::act_row_bytes(layout->act, m.cols);
    const std::vector<float> expected = packed_matmul(m, packed, X, n, kThreads);
    int ran = 0;
    for (const detail::PackedIsa isa : kIsas) {
        const detail::PackedGemmFn gemm = detail::packed_gemm(type, isa);
        if (gemm.fn == nullptr)
            continue;
        ++ran;
        const std::vector<float> Y = isa_matmul(gemm, packed, act, stride, n);
        QVERIFY2(std::memcmp(Y.data(), expected.data(), Y.size() * sizeof(float)) == 0, isa_name(isa));
    }
    QVERIFY(ran > 0);
}

void TestPackedMatmul::float_rows_of_any_length() {
    // Float types have no blocks: a tile's columns end anywhere.
    std::mt19937 rng(45);
    for (const WeightType type : {WeightType::F16, WeightType::BF16}) {
        if (!has_packed_kernel(type))
            continue;
        for (const std::size_t cols : {std::size_t{1}, std::size_t{7}, std::size_t{77}}) {
            const Matrix m = random_matrix(type, 17, cols, rng);
            const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), m.rows, cols, kThreads);
            const std::size_t n = 13;
            const std::vector<float> X = random_activations(n * cols, rng);
            const std::vector<float> Y = packed_matmul(m, packed, X, n, kThreads);
            for (std::size_t i = 0; i < n; ++i)
                check_against_reference(m, X.data() + i * cols, Y.data() + i * m.rows, i);
        }
    }
}

void TestPackedMatmul::mxfp4_scales_exact_for_every_exponent() {
    // The tiles keep MXFP4's E8M0 bytes and every instruction set turns
    // them into floats itself (weight_matrices.h: every_mxfp4_exponent).
    if (!has_packed_kernel(WeightType::MXFP4))
        QSKIP("no tile kernel for MXFP4 on this build or CPU");
    const EveryMxfp4Exponent t = every_mxfp4_exponent();
    const PackedWeights packed = PackedWeights::pack(WeightType::MXFP4, t.m.bytes.data(), t.m.rows, t.m.cols, kThreads);
    const detail::ActFormat format = detail::packed_layout(WeightType::MXFP4)->act;
    const std::vector<std::byte> act = prepare(format, t.x, t.m.cols);
    const std::size_t n = t.m.rows, stride = detail::act_row_bytes(format, t.m.cols);
    for (const detail::PackedIsa isa : kIsas) {
        const detail::PackedGemmFn gemm = detail::packed_gemm(WeightType::MXFP4, isa);
        if (gemm.fn == nullptr)
            continue;
        const std::vector<float> Y = isa_matmul(gemm, packed, act, stride, n);
        for (std::size_t e = 0; e < n; ++e)
            QVERIFY2(Y[e * t.m.rows + e] == t.expected[e],
                     qPrintable(QStringLiteral("%1, e %2: got %3, expected %4")
                                    .arg(isa_name(isa)).arg(e).arg(static_cast<double>(Y[e * t.m.rows + e]), 0, 'g', 9)
                                    .arg(static_cast<double>(t.expected[e]), 0, 'g', 9)));
    }
}

void TestPackedMatmul::matmuls_mix_packed_and_plain_jobs() {
    // A layer's Q, K and V share their inputs, in a Q4_K_M file with two
    // types, and any of them may lack a packed copy: each output equals its
    // own matmul, whatever the others are.
    std::mt19937 rng(50);
    const std::size_t cols = 512, n = 6;
    const WeightType types[] = {WeightType::Q8_0, WeightType::Q6_K, WeightType::F16, WeightType::Q4_K,
                                WeightType::F32};
    const std::size_t heights[] = {100, 33, 64, 256, 20};
    std::vector<Matrix> matrices;
    std::vector<PackedWeights> packed;
    for (std::size_t j = 0; j < 5; ++j) {
        matrices.push_back(random_matrix(types[j], heights[j], cols, rng));
        packed.push_back(PackedWeights::pack(types[j], matrices[j].bytes.data(), heights[j], cols, kThreads));
    }
    const std::vector<float> X = random_activations(n * cols, rng);
    std::vector<std::vector<float>> ys(5);
    std::vector<MatmulJob> jobs;
    for (std::size_t j = 0; j < 5; ++j) {
        ys[j].assign(n * heights[j], std::nanf(""));
        jobs.push_back({types[j], matrices[j].bytes.data(), heights[j], ys[j].data(), &packed[j]});
    }
    matmuls(jobs, cols, X.data(), n, kThreads);
    for (std::size_t j = 0; j < 5; ++j) {
        const std::vector<float> alone = packed_matmul(matrices[j], packed[j], X, n, kThreads);
        QVERIFY2(ys[j] == alone, to_string(types[j]).data());
    }
}

void TestPackedMatmul::scalar_path_reads_the_file_layout() {
    // The portable path has no tile kernels: a packed job there is the
    // plain job, bit for bit.
    std::mt19937 rng(60);
    for (const WeightType type : kAllTypes) {
        const Matrix m = random_matrix(type, 20, 256, rng);
        const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), m.rows, m.cols, kThreads);
        const std::vector<float> X = random_activations(3 * m.cols, rng);
        PathScope scope(SimdPath::Scalar);
        std::vector<float> plain(3 * m.rows);
        matmul(type, m.bytes.data(), m.rows, m.cols, X.data(), 3, plain.data(), kThreads);
        QVERIFY2(packed_matmul(m, packed, X, 3, kThreads) == plain, to_string(type).data());
    }
}

void TestPackedMatmul::rejects_packed_weights_of_another_shape() {
    std::mt19937 rng(70);
    WeightType type = WeightType::F32;
    for (const WeightType t : kAllTypes)
        if (has_packed_kernel(t))
            type = t;
    if (!has_packed_kernel(type))
        QSKIP("no tile kernel on this build or CPU");
    const Matrix m = random_matrix(type, 32, 256, rng);
    const PackedWeights packed = PackedWeights::pack(type, m.bytes.data(), 16, 256, kThreads);
    std::vector<float> X(256), Y(32);
    const MatmulJob job{type, m.bytes.data(), 32, Y.data(), &packed};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, matmuls({&job, 1}, 256, X.data(), 1, kThreads));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, PackedWeights::pack(type, nullptr, 16, 256, kThreads));
}

void TestPackedMatmul::activation_block_sums_are_their_codes_sums() {
    // The blocks-of-32 kernels start each block's integer sum at -offset x
    // this sum: it must be exactly the sum of the block's stored codes, on
    // every path (the AVX2 quantizer sums them in registers). Q4_1 and Q5_1
    // multiply their mins by s, ggml's Q8_1 s: f16(amax / 127 x sum).
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> value(-4.0f, 4.0f);
    std::vector<float> x(256);
    for (float& v : x)
        v = value(rng);
    x[40] = 1e6f; // one block with a large outlier: most of its codes round to 0
    for (const SimdPath path : kernel_test::available_paths()) {
        std::vector<detail::ActBlock32Sum> blocks(x.size() / detail::kActBlockValues);
        detail::quantize_act32_sum(x.data(), x.size(), blocks.data(), path);
        for (std::size_t k = 0; k < blocks.size(); ++k) {
            const detail::ActBlock32Sum& b = blocks[k];
            int sum = 0;
            for (const std::int8_t q : b.qs)
                sum += q;
            QCOMPARE(b.sum, sum);
            float amax = 0.0f;
            for (std::size_t i = 0; i < detail::kActBlockValues; ++i)
                amax = std::max(amax, std::fabs(x[k * detail::kActBlockValues + i]));
            QCOMPARE(b.s, f16_to_f32(f32_to_f16(amax / 127.0f * static_cast<float>(sum))));
        }
    }
}

QTEST_APPLESS_MAIN(TestPackedMatmul)
#include "test_packed_matmul.moc"

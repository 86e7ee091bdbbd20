// matvec / matmul for every weight type against a double-precision dot
// product of the weights as quant_blocks dequantizes them (tested on its
// own in tests/model/test_quant_blocks.cpp), on every SIMD path the build
// and CPU have and with one and two threads; tolerances as weight_matrices.h derives them.
// A test with activations that are exactly representable in 8 bits drops
// the first term, so any slip in decoding the weights' bits shows.
#include <QTest>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernel_test_support.h"
#include "weight_matrices.h"
#include "kernels/cpu/activation_quant.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/row_dot.h"

using namespace kvscope::kernels::cpu;
using kernel_test::PathScope;
using namespace kernel_test;

Q_DECLARE_METATYPE(kvscope::kernels::cpu::WeightType)

namespace {

// Threads for the checks that are not about threads: two, so that the
// parallel paths run.
constexpr int kThreads = 2;

std::vector<float> run_matvec(const Matrix& m, const std::vector<float>& x) {
    std::vector<float> y(m.rows, std::nanf(""));
    matvec(m.type, m.bytes.data(), m.rows, m.cols, x.data(), y.data(), kThreads);
    return y;
}

void add_type_rows() {
    QTest::addColumn<WeightType>("type");
    for (const WeightType type : kAllTypes)
        QTest::newRow(to_string(type).data()) << type;
}

} // namespace

class TestMatmul : public QObject {
    Q_OBJECT
private slots:

    void matvec_matches_reference_data() { add_type_rows(); }
    void matvec_matches_reference();
    void exact_activations_leave_only_rounding_data() { add_type_rows(); }
    void exact_activations_leave_only_rounding();
    void simd_paths_match_scalar_data() { add_type_rows(); }
    void simd_paths_match_scalar();
    void avx_vnni_equals_avx2();
    void avx512_vnni_equals_avx2();
    void neon_dot_equals_neon_data() { add_type_rows(); }
    void neon_dot_equals_neon();
    void matmul_matches_reference_data() { add_type_rows(); }
    void matmul_matches_reference();
    void matmul_equals_matvecs_data() { add_type_rows(); }
    void matmul_equals_matvecs();
    void float_rows_of_any_length();
    void mxfp4_scales_exact_for_every_exponent();
    void activation_codes_follow_definition();
    void threads_do_not_change_results();
    void matmuls_equal_matmul();
    void concurrent_callers_get_the_same_results();
    void row_bytes_match_ggml();
    void rejects_bad_arguments();
};

void TestMatmul::matvec_matches_reference() {
    QFETCH(WeightType, type);
    std::mt19937 rng(static_cast<unsigned>(type) + 1);
    // 300 x 768 is large enough to run threaded; 3 x 256 runs on one thread.
    for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{300, 768}, {3, 256}}) {
        const Matrix m = random_matrix(type, rows, cols, rng);
        const std::vector<float> x = random_activations(cols, rng);
        for (const SimdPath path : kernel_test::available_paths()) {
            PathScope scope(path);
            check_against_reference(m, x.data(), run_matvec(m, x).data(), 0);
        }
    }
}

void TestMatmul::exact_activations_leave_only_rounding() {
    QFETCH(WeightType, type);
    std::mt19937 rng(static_cast<unsigned>(type) + 100);
    const Matrix m = random_matrix(type, 64, 512, rng);
    const std::vector<float> x = exact_activations(m.cols, rng);
    for (const SimdPath path : kernel_test::available_paths()) {
        PathScope scope(path);
        const std::vector<float> y = run_matvec(m, x);
        for (std::size_t r = 0; r < m.rows; ++r) {
            // No quantization error: the activations are exact in 8 bits.
            const Expected e = expected_dot(m, r, x.data());
            const double rounding = e.rounding(m.cols);
            if (!(std::fabs(y[r] - e.value) <= rounding))
                QFAIL(qPrintable(QStringLiteral("%1 path %2 row %3: got %4, expected %5 +- %6")
                                     .arg(to_string(type).data()).arg(to_string(path)).arg(r)
                                     .arg(static_cast<double>(y[r]), 0, 'g', 9)
                                     .arg(e.value, 0, 'g', 9).arg(rounding, 0, 'g', 3)));
        }
    }
}

void TestMatmul::simd_paths_match_scalar() {
    QFETCH(WeightType, type);
    std::mt19937 rng(static_cast<unsigned>(type) + 200);
    const Matrix m = random_matrix(type, 128, 1024, rng);
    const std::vector<float> x = random_activations(m.cols, rng);
    std::vector<float> scalar;
    {
        PathScope scope(SimdPath::Scalar);
        scalar = run_matvec(m, x);
    }
    for (const SimdPath path : kernel_test::available_paths()) {
        if (path == SimdPath::Scalar)
            continue;
        PathScope scope(path);
        const std::vector<float> simd = run_matvec(m, x);
        // Same quantized integers on every path: only the float summation
        // order differs, so twice the rounding bound covers it.
        for (std::size_t r = 0; r < m.rows; ++r) {
            const Expected e = expected_dot(m, r, x.data());
            const double tolerance = 2 * e.rounding(m.cols);
            QVERIFY2(std::fabs(scalar[r] - simd[r]) <= tolerance,
                     qPrintable(QStringLiteral("row %1: scalar %2, %3 %4 (reference %5)")
                                    .arg(r).arg(static_cast<double>(scalar[r]), 0, 'g', 9).arg(to_string(path))
                                    .arg(static_cast<double>(simd[r]), 0, 'g', 9).arg(e.value, 0, 'g', 9)));
        }
    }
}

void TestMatmul::avx_vnni_equals_avx2() {
    // Both compute exact int32 block sums, so the outputs must agree bit
    // for bit, for every input count of the multi-input kernel.
#if defined(KVSCOPE_KERNELS_AVXVNNI)
    using namespace kvscope::kernels::cpu::detail;
    if (avxvnni_row_dot_multi(WeightType::Q8_0).fn == nullptr)
        QSKIP("this CPU has no AVX-VNNI");
    std::mt19937 rng(250);
    for (const WeightType type : {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q5_0, WeightType::MXFP4}) {
        const Matrix m = random_matrix(type, 16, 1024, rng);
        const std::size_t a_row_bytes = m.cols / kActBlockValues * sizeof(ActBlock32);
        const std::vector<float> X = random_activations(4 * m.cols, rng);
        std::vector<ActBlock32> act(4 * m.cols / kActBlockValues);
        quantize_act32(X.data(), X.size(), act.data(), SimdPath::Avx2);
        const RowDotMultiFn vnni = avxvnni_row_dot_multi(type), avx2 = avx2_row_dot_multi(type);
        QVERIFY(vnni.fn != nullptr && avx2.fn != nullptr);
        const std::size_t w_row_bytes = weight_row_bytes(type, m.cols);
        for (std::size_t r = 0; r < m.rows; ++r)
            for (std::size_t count = 1; count <= 4; ++count) {
                float a[4], b[4];
                const std::byte* w = m.bytes.data() + r * w_row_bytes;
                vnni.fn(w, act.data(), a_row_bytes, count, m.cols, a);
                avx2.fn(w, act.data(), a_row_bytes, count, m.cols, b);
                QVERIFY2(std::memcmp(a, b, count * sizeof(float)) == 0,
                         qPrintable(QStringLiteral("%1 row %2, %3 inputs: vnni %4, avx2 %5")
                                        .arg(to_string(type).data()).arg(r).arg(count)
                                        .arg(static_cast<double>(a[0]), 0, 'g', 9)
                                        .arg(static_cast<double>(b[0]), 0, 'g', 9)));
            }
    }
#else
    QSKIP("this build has no AVX-VNNI kernels");
#endif
}

void TestMatmul::avx512_vnni_equals_avx2() {
    // The AVX-512 kernel reads paired activations (ActPair64) and the AVX2
    // one plain blocks; both are exact in the integer sums and do the same
    // float operations in the same order, so the outputs must agree bit for
    // bit: for every input count, and for an odd number of blocks per row.
#if defined(KVSCOPE_KERNELS_AVX512VNNI)
    using namespace kvscope::kernels::cpu::detail;
    if (!avx512vnni_available())
        QSKIP("this CPU has no AVX-512 VNNI");
    constexpr std::size_t kInputs = 8;
    std::mt19937 rng(251);
    for (const WeightType type : {WeightType::Q8_0, WeightType::Q4_0, WeightType::Q5_0})
        for (const std::size_t cols : {std::size_t{1024}, std::size_t{1056}, std::size_t{32}}) {
            const Matrix m = random_matrix(type, 8, cols, rng);
            const std::size_t blocks = cols / kActBlockValues, pairs = (blocks + 1) / 2;
            const std::vector<float> X = random_activations(kInputs * cols, rng);
            std::vector<ActBlock32> act(kInputs * blocks);
            quantize_act32(X.data(), X.size(), act.data(), SimdPath::Avx2);
            std::vector<ActPair64> paired(kInputs * pairs);
            for (std::size_t i = 0; i < kInputs; ++i)
                pair_act32(act.data() + i * blocks, blocks, paired.data() + i * pairs);
            const RowDotMultiFn wide = avx512vnni_row_dot_multi(type), avx2 = avx2_row_dot_multi(type);
            QVERIFY(wide.fn != nullptr && wide.max_inputs == kInputs && avx2.fn != nullptr);
            const std::size_t w_row_bytes = weight_row_bytes(type, cols);
            for (std::size_t r = 0; r < m.rows; ++r) {
                const std::byte* w = m.bytes.data() + r * w_row_bytes;
                float expected[kInputs];
                for (std::size_t i = 0; i < kInputs; ++i)
                    avx2.fn(w, act.data() + i * blocks, 0, 1, cols, &expected[i]);
                for (std::size_t count = 1; count <= kInputs; ++count) {
                    float got[kInputs];
                    wide.fn(w, paired.data(), pairs * sizeof(ActPair64), count, cols, got);
                    QVERIFY2(std::memcmp(got, expected, count * sizeof(float)) == 0,
                             qPrintable(QStringLiteral("%1, %2 columns, row %3, %4 inputs: avx512 %5, avx2 %6")
                                            .arg(to_string(type).data()).arg(cols).arg(r).arg(count)
                                            .arg(static_cast<double>(got[0]), 0, 'g', 9)
                                            .arg(static_cast<double>(expected[0]), 0, 'g', 9)));
                }
                QCOMPARE(avx512vnni_row_dot(type)(w, paired.data(), cols), expected[0]);
            }
        }
#else
    QSKIP("this build has no AVX-512 VNNI kernels");
#endif
}

#if defined(KVSCOPE_KERNELS_NEON)
namespace {

// The activations of `inputs` rows of `cols` values as `type` reads them.
std::vector<std::byte> neon_activations(WeightType type, const std::vector<float>& X, std::size_t inputs,
                                        std::size_t cols) {
    using namespace kvscope::kernels::cpu::detail;
    const ActFormat format = act_format(type, SimdPath::Neon);
    const std::size_t row_bytes = act_row_bytes(format, cols);
    std::vector<std::byte> act(inputs * row_bytes);
    for (std::size_t i = 0; i < inputs; ++i) {
        std::byte* row = act.data() + i * row_bytes;
        const float* x = X.data() + i * cols;
        if (format == ActFormat::Q8x32)
            quantize_act32(x, cols, reinterpret_cast<ActBlock32*>(row), SimdPath::Neon);
        else if (format == ActFormat::Q8x32Sums)
            quantize_act32_sum(x, cols, reinterpret_cast<ActBlock32Sum*>(row), SimdPath::Neon);
        else if (format == ActFormat::Q8x256)
            quantize_act256(x, cols, reinterpret_cast<ActBlock256*>(row), SimdPath::Neon);
        else
            std::memcpy(row, x, row_bytes);
    }
    return act;
}

} // namespace
#endif

void TestMatmul::neon_dot_equals_neon() {
    // Each NEON kernel's result, for one input and for every count of its
    // multi-input kernel, must be bit-identical to the one-input kernel's
    // (a sequence's logits must not depend on which others decode with
    // it), and the SDOT kernels, exact in the integer sums like the baseline
    // ones and with the same float operations, bit-identical to those. Row
    // lengths with a last group of fewer than four blocks of 32, or an odd
    // number of super-blocks, included.
#if defined(KVSCOPE_KERNELS_NEON)
    using namespace kvscope::kernels::cpu::detail;
    QFETCH(WeightType, type);
    std::mt19937 rng(static_cast<unsigned>(type) + 260);
    const bool is_float = act_block(type) == 0;
    const std::size_t cols_list[] = {1024, act_block(type) == 256 ? 768u : is_float ? 77u : 1056u,
                                     is_float ? 3u : act_block(type)};
    const RowDotMultiFn neon = neon_row_dot_multi(type);
    QVERIFY(neon.fn != nullptr && neon.max_inputs <= kMaxMultiInputs);
    RowDotMultiFn dot;
    RowDot dot_single = nullptr;
#if defined(KVSCOPE_KERNELS_NEON_DOTPROD)
    if (has_neon_dot(best_simd_path())) {
        dot = neondot_row_dot_multi(type);
        dot_single = neondot_row_dot(type);
        QVERIFY(is_float || (dot.fn != nullptr && dot_single != nullptr && dot.max_inputs == neon.max_inputs));
    }
#endif
    for (const std::size_t cols : cols_list) {
        const Matrix m = random_matrix(type, 6, cols, rng);
        const std::size_t inputs = neon.max_inputs;
        const std::vector<float> X = random_activations(inputs * cols, rng);
        const std::vector<std::byte> act = neon_activations(type, X, inputs, cols);
        const std::size_t a_row_bytes = act.size() / inputs, w_row_bytes = weight_row_bytes(type, cols);
        for (std::size_t r = 0; r < m.rows; ++r) {
            const std::byte* w = m.bytes.data() + r * w_row_bytes;
            float expected[kMaxMultiInputs];
            for (std::size_t i = 0; i < inputs; ++i)
                expected[i] = neon_row_dot(type)(w, act.data() + i * a_row_bytes, cols);
            for (std::size_t i = 0; dot_single != nullptr && i < inputs; ++i)
                QCOMPARE(dot_single(w, act.data() + i * a_row_bytes, cols), expected[i]);
            for (const RowDotMultiFn& multi : {neon, dot})
                for (std::size_t count = 1; multi.fn != nullptr && count <= inputs; ++count) {
                    float got[kMaxMultiInputs];
                    multi.fn(w, act.data(), a_row_bytes, count, cols, got);
                    QVERIFY2(std::memcmp(got, expected, count * sizeof(float)) == 0,
                             qPrintable(QStringLiteral("%1 cols %2 row %3, %4 inputs (%5): got %6, expected %7")
                                            .arg(to_string(type).data()).arg(cols).arg(r).arg(count)
                                            .arg(multi.fn == neon.fn ? "neon" : "neon-dotprod")
                                            .arg(static_cast<double>(got[count - 1]), 0, 'g', 9)
                                            .arg(static_cast<double>(expected[count - 1]), 0, 'g', 9)));
                }
        }
    }
#else
    QSKIP("this build has no NEON kernels");
#endif
}

void TestMatmul::matmul_matches_reference() {
    QFETCH(WeightType, type);
    std::mt19937 rng(static_cast<unsigned>(type) + 300);
    const Matrix m = random_matrix(type, 97, 512, rng);
    for (const std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{70}}) {
        const std::vector<float> X = random_activations(n * m.cols, rng);
        for (const SimdPath path : kernel_test::available_paths()) {
            PathScope scope(path);
            std::vector<float> Y(n * m.rows, std::nanf(""));
            matmul(type, m.bytes.data(), m.rows, m.cols, X.data(), n, Y.data(), kThreads);
            for (std::size_t i = 0; i < n; ++i)
                check_against_reference(m, X.data() + i * m.cols, Y.data() + i * m.rows, i);
        }
    }
}

void TestMatmul::matmul_equals_matvecs() {
    // A small batch (n = the sequences decoding together) decodes each
    // weight block once for several inputs (groups of 4 or 2, then a
    // remainder): every output must still be the matvec of its own input.
    // Float types also get a length with tails (77).
    QFETCH(WeightType, type);
    std::mt19937 rng(static_cast<unsigned>(type) + 350);
    const bool is_float = act_block(type) == 0;
    for (const std::size_t cols : {std::size_t{512}, std::size_t{is_float ? 77u : 256u}}) {
        const Matrix m = random_matrix(type, 37, cols, rng);
        for (std::size_t n = 2; n <= 7; ++n) {
            const std::vector<float> X = random_activations(n * m.cols, rng);
            for (const SimdPath path : kernel_test::available_paths()) {
                PathScope scope(path);
                std::vector<float> Y(n * m.rows, std::nanf(""));
                matmul(type, m.bytes.data(), m.rows, m.cols, X.data(), n, Y.data(), kThreads);
                for (std::size_t i = 0; i < n; ++i) {
                    const std::vector<float> x(X.begin() + i * m.cols, X.begin() + (i + 1) * m.cols);
                    const std::vector<float> y = run_matvec(m, x);
                    // Bit-identical: per input the same operations in the
                    // same order (a sequence's logits must not depend on
                    // which others decode with it).
                    for (std::size_t r = 0; r < m.rows; ++r) {
                        QVERIFY2(std::memcmp(&Y[i * m.rows + r], &y[r], sizeof(float)) == 0,
                                 qPrintable(QStringLiteral("path %1 cols %2 n %3 input %4 row %5: matmul %6, matvec %7")
                                                .arg(to_string(path)).arg(cols).arg(n).arg(i).arg(r)
                                                .arg(static_cast<double>(Y[i * m.rows + r]), 0, 'g', 9)
                                                .arg(static_cast<double>(y[r]), 0, 'g', 9)));
                    }
                }
            }
        }
    }
}

void TestMatmul::float_rows_of_any_length() {
    // Float types have no blocks: lengths that are not a multiple of the
    // SIMD width exercise the tails.
    std::mt19937 rng(400);
    for (const WeightType type : {WeightType::F32, WeightType::F16, WeightType::BF16})
        for (const std::size_t cols : {std::size_t{1}, std::size_t{7}, std::size_t{77}}) {
            const Matrix m = random_matrix(type, 5, cols, rng);
            const std::vector<float> x = random_activations(cols, rng);
            for (const SimdPath path : kernel_test::available_paths()) {
                PathScope scope(path);
                check_against_reference(m, x.data(), run_matvec(m, x).data(), 0);
            }
        }
}

void TestMatmul::mxfp4_scales_exact_for_every_exponent() {
    // Row kernels, one input and groups of inputs (the diagonal of X W^T).
    const EveryMxfp4Exponent t = every_mxfp4_exponent();
    const std::size_t n = t.m.rows;
    for (const SimdPath path : kernel_test::available_paths()) {
        PathScope scope(path);
        std::vector<float> Y(n * t.m.rows, std::nanf(""));
        matmul(WeightType::MXFP4, t.m.bytes.data(), t.m.rows, t.m.cols, t.x.data(), n, Y.data(), kThreads);
        for (std::size_t e = 0; e < n; ++e)
            QVERIFY2(Y[e * t.m.rows + e] == t.expected[e],
                     qPrintable(QStringLiteral("path %1, e %2: got %3, expected %4")
                                    .arg(to_string(path)).arg(e).arg(static_cast<double>(Y[e * t.m.rows + e]), 0, 'g', 9)
                                    .arg(static_cast<double>(t.expected[e]), 0, 'g', 9)));
    }
}

namespace {

// activation_quant.h's definition, written out: codes x * (127 / amax)
// rounded to nearest even (clamped to +-127, NaN to -127), amax = max|x|.
std::int8_t expected_code(float x, float amax) {
    const float v = x * (amax != 0.0f ? 127.0f / amax : 0.0f);
    return static_cast<std::int8_t>(std::nearbyint(v >= -127.0f ? (v <= 127.0f ? v : 127.0f) : -127.0f));
}

float block_amax(const float* x, std::size_t n) {
    float amax = 0.0f;
    for (std::size_t i = 0; i < n; ++i)
        if (!std::isnan(x[i]))
            amax = std::max(amax, std::fabs(x[i]));
    return amax;
}

} // namespace

void TestMatmul::activation_codes_follow_definition() {
    // Internal, but the premise of matching llama.cpp (whose x86 quantizers
    // this is) and of "both paths agree": per block q = x * (127 / amax)
    // rounded to nearest (ties to even); d = amax / 127 rounded to f16 for
    // blocks of 32, 1 / (127 / amax) for blocks of 256; identical bytes on
    // both paths, including ties, zeros, infinities and NaN.
    using namespace kvscope::kernels::cpu::detail;
    std::mt19937 rng(450);
    std::vector<float> x = random_activations(1024, rng);
    // Block 0 gets 127 / amax = 1 exactly and halves: every one a tie.
    x[0] = 127.0f;
    for (std::size_t i = 1; i < 64; ++i)
        x[i] = static_cast<float>(i) - 32.5f;
    std::fill(x.begin() + 256, x.begin() + 288, 0.0f); // an all-zero block of 32
    // A value where x * (127 / amax) = -45.4999962 rounds to -45 (as
    // llama.cpp) but x / (amax / 127) = -45.5000038 would give -46.
    x[320] = std::bit_cast<float>(0x40492832u); // amax of its block, 3.14307833
    x[321] = std::bit_cast<float>(0xbf9022d9u); // -1.12606347
    for (std::size_t i = 322; i < 352; ++i)
        x[i] = std::clamp(x[i], -3.0f, 3.0f);
    for (std::size_t i = 352; i < 384; ++i) // a block whose d is an f16 subnormal
        x[i] *= 1e-4f;
    x[800] = INFINITY;
    x[840] = NAN;
    for (const SimdPath path : kernel_test::available_paths()) {
        std::vector<ActBlock256> blocks(4);
        quantize_act256(x.data(), x.size(), blocks.data(), path);
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            const float* xb = x.data() + 256 * b;
            const float amax = block_amax(xb, 256);
            QCOMPARE(blocks[b].d, amax != 0.0f ? 1.0f / (127.0f / amax) : 0.0f);
            for (std::size_t i = 0; std::isfinite(amax) && i < 256; ++i)
                if (std::isfinite(xb[i]))
                    QCOMPARE(blocks[b].qs[i], expected_code(xb[i], amax));
            for (std::size_t j = 0; j < 16; ++j) {
                int sum = 0;
                for (std::size_t i = 0; i < 16; ++i)
                    sum += blocks[b].qs[16 * j + i];
                QCOMPARE(blocks[b].bsums[j], static_cast<std::int16_t>(sum));
            }
        }
        std::vector<ActBlock32> blocks32(32);
        quantize_act32(x.data(), x.size(), blocks32.data(), path);
        for (std::size_t b = 0; b < blocks32.size(); ++b) {
            const float* xb = x.data() + 32 * b;
            const float amax = block_amax(xb, 32);
            QCOMPARE(blocks32[b].d, f16_to_f32(f32_to_f16(amax / 127.0f)));
            for (std::size_t i = 0; std::isfinite(amax) && i < 32; ++i)
                if (std::isfinite(xb[i]))
                    QCOMPARE(blocks32[b].qs[i], expected_code(xb[i], amax));
        }
        QCOMPARE(blocks32[10].qs[1], std::int8_t{-45});
        for (std::size_t i = 1; i < 64; ++i)
            QVERIFY2(blocks[0].qs[i] % 2 == 0 && (i >= 32 || blocks32[0].qs[i] % 2 == 0), "ties round to even");
    }
    // Every SIMD path's bytes are the scalar path's, the infinite and NaN
    // blocks included.
    std::vector<ActBlock256> scalar(4), simd(4);
    quantize_act256(x.data(), x.size(), scalar.data(), SimdPath::Scalar);
    std::vector<ActBlock32> scalar32(32), simd32(32);
    quantize_act32(x.data(), x.size(), scalar32.data(), SimdPath::Scalar);
    std::vector<ActBlock32Sum> scalar_sums(32), simd_sums(32);
    quantize_act32_sum(x.data(), x.size(), scalar_sums.data(), SimdPath::Scalar);
    for (const SimdPath path : kernel_test::available_paths()) {
        quantize_act256(x.data(), x.size(), simd.data(), path);
        QVERIFY2(std::memcmp(scalar.data(), simd.data(), sizeof(ActBlock256) * scalar.size()) == 0, to_string(path));
        quantize_act32(x.data(), x.size(), simd32.data(), path);
        QVERIFY2(std::memcmp(scalar32.data(), simd32.data(), sizeof(ActBlock32) * scalar32.size()) == 0,
                 to_string(path));
        quantize_act32_sum(x.data(), x.size(), simd_sums.data(), path);
        QVERIFY2(std::memcmp(scalar_sums.data(), simd_sums.data(), sizeof(ActBlock32Sum) * scalar_sums.size()) == 0,
                 to_string(path));
    }
}

void TestMatmul::matmuls_equal_matmul() {
    // Matrices of different types and heights sharing the inputs, as a
    // layer's Q/K/V do (a Q4_K_M file mixes Q4_K and Q6_K): each output must
    // be bit-identical to its own matmul, for one input and for a batch, on
    // every path and thread count, whichever thread's range crosses from one
    // matrix into the next.
    std::mt19937 rng(600);
    const std::size_t cols = 512;
    const WeightType types[] = {WeightType::Q8_0, WeightType::Q6_K, WeightType::F16, WeightType::Q4_K};
    const std::size_t heights[] = {300, 77, 129, 256};
    std::vector<Matrix> matrices;
    for (std::size_t j = 0; j < 4; ++j)
        matrices.push_back(random_matrix(types[j], heights[j], cols, rng));
    for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{9}}) {
        const std::vector<float> X = random_activations(n * cols, rng);
        for (const SimdPath path : kernel_test::available_paths())
            for (const int threads : {1, 2, 3}) {
                PathScope scope(path);
                std::vector<std::vector<float>> ys(4);
                std::vector<MatmulJob> jobs;
                for (std::size_t j = 0; j < 4; ++j) {
                    ys[j].assign(n * heights[j], std::nanf(""));
                    jobs.push_back({types[j], matrices[j].bytes.data(), heights[j], ys[j].data()});
                }
                matmuls(jobs, cols, X.data(), n, threads);
                for (std::size_t j = 0; j < 4; ++j) {
                    std::vector<float> expected(n * heights[j]);
                    matmul(types[j], matrices[j].bytes.data(), heights[j], cols, X.data(), n, expected.data(),
                           threads);
                    QVERIFY2(std::memcmp(ys[j].data(), expected.data(), expected.size() * sizeof(float)) == 0,
                             qPrintable(QStringLiteral("%1, %2 inputs, path %3, %4 threads")
                                            .arg(to_string(types[j]).data()).arg(n).arg(to_string(path)).arg(threads)));
                }
            }
    }
}

void TestMatmul::threads_do_not_change_results() {
    // Every output is computed whole by one thread: the thread count must
    // not change a single bit.
    std::mt19937 rng(500);
    for (const WeightType type : kAllTypes) {
        const Matrix m = random_matrix(type, 200, 512, rng);
        const std::size_t n = 9;
        const std::vector<float> X = random_activations(n * m.cols, rng);
        std::vector<float> one(n * m.rows), two(n * m.rows);
        matmul(type, m.bytes.data(), m.rows, m.cols, X.data(), n, one.data(), 1);
        matmul(type, m.bytes.data(), m.rows, m.cols, X.data(), n, two.data(), 2);
        QVERIFY2(one == two, to_string(type).data());
    }
}

void TestMatmul::concurrent_callers_get_the_same_results() {
    // Two engines side by side call kernels from two threads at once (one
    // gets the pool, the other runs alone), and --threads may exceed the
    // cores: neither may change a bit of the results.
    std::mt19937 rng(600);
    const Matrix m = random_matrix(WeightType::Q4_K, 300, 768, rng);
    const std::size_t n = 3;
    const std::vector<float> X = random_activations(n * m.cols, rng);
    std::vector<float> expected(n * m.rows);
    matmul(m.type, m.bytes.data(), m.rows, m.cols, X.data(), n, expected.data(), kThreads);
    std::vector<float> expected_row(m.rows);
    matvec(m.type, m.bytes.data(), m.rows, m.cols, X.data(), expected_row.data(), kThreads);

    std::atomic<int> mismatches{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c)
        callers.emplace_back([&] {
            std::vector<float> Y(n * m.rows), y(m.rows);
            for (int rep = 0; rep < 40; ++rep) {
                matmul(m.type, m.bytes.data(), m.rows, m.cols, X.data(), n, Y.data(), 5);
                matvec(m.type, m.bytes.data(), m.rows, m.cols, X.data(), y.data(), 5);
                mismatches += (Y != expected) + (y != expected_row);
            }
        });
    for (std::thread& caller : callers)
        caller.join();
    QCOMPARE(mismatches.load(), 0);
}

void TestMatmul::row_bytes_match_ggml() {
    // ggml's block sizes: 4096 values per row.
    QCOMPARE(weight_row_bytes(WeightType::F32, 4096), std::size_t{16384});
    QCOMPARE(weight_row_bytes(WeightType::F16, 4096), std::size_t{8192});
    QCOMPARE(weight_row_bytes(WeightType::BF16, 4096), std::size_t{8192});
    QCOMPARE(weight_row_bytes(WeightType::Q8_0, 4096), std::size_t{128 * 34});
    QCOMPARE(weight_row_bytes(WeightType::Q4_0, 4096), std::size_t{128 * 18});
    QCOMPARE(weight_row_bytes(WeightType::Q5_0, 4096), std::size_t{128 * 22});
    QCOMPARE(weight_row_bytes(WeightType::Q4_K, 4096), std::size_t{16 * 144});
    QCOMPARE(weight_row_bytes(WeightType::Q5_K, 4096), std::size_t{16 * 176});
    QCOMPARE(weight_row_bytes(WeightType::Q6_K, 4096), std::size_t{16 * 210});
    QCOMPARE(weight_row_bytes(WeightType::Q4_1, 4096), std::size_t{128 * 20});
    QCOMPARE(weight_row_bytes(WeightType::Q5_1, 4096), std::size_t{128 * 24});
    QCOMPARE(weight_row_bytes(WeightType::IQ4_NL, 4096), std::size_t{128 * 18});
    QCOMPARE(weight_row_bytes(WeightType::Q2_K, 4096), std::size_t{16 * 84});
    QCOMPARE(weight_row_bytes(WeightType::Q3_K, 4096), std::size_t{16 * 110});
    QCOMPARE(weight_row_bytes(WeightType::IQ4_XS, 4096), std::size_t{16 * 136});
    QCOMPARE(weight_row_bytes(WeightType::MXFP4, 4096), std::size_t{128 * 17});
    QVERIFY(is_weight_type(39)); // MXFP4
    QVERIFY(is_weight_type(8));
    QVERIFY(is_weight_type(23)); // IQ4_XS
    QVERIFY(!is_weight_type(9)); // Q8_1: not computed with
    QVERIFY(!is_weight_type(16)); // IQ2_XXS
}

void TestMatmul::rejects_bad_arguments() {
    std::vector<std::byte> w(34 * 8);
    std::vector<float> x(256), y(8);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             matvec(WeightType::Q8_0, w.data(), 1, 48, x.data(), y.data(), kThreads));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             matvec(WeightType::Q4_K, w.data(), 1, 128, x.data(), y.data(), kThreads));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             matvec(WeightType::Q8_0, nullptr, 1, 32, x.data(), y.data(), kThreads));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             matmul(WeightType::F32, w.data(), 2, 4, nullptr, 1, y.data(), kThreads));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             weight_row_bytes(static_cast<WeightType>(9), 32));
}

QTEST_APPLESS_MAIN(TestMatmul)
#include "test_matmul.moc"

// Random weight matrices of every type with their dequantized values, and
// the tolerance of a dot product against a double-precision reference:
// shared by the matmul tests (test_matmul.cpp, test_packed_matmul.cpp).
//
// Tolerances, per output value, from the two error sources:
//  - activation quantization (quantized weight types only): each x_j is
//    rounded to a multiple of d = max|x over its block| / 127, an error of
//    at most d / 2, and stored with d as llama.cpp stores it (rounded to
//    f16 for blocks of 32: kernels/cpu/activation_quant.h), which moves the
//    value by at most 127 |d_stored - d|; so |error| <= sum_j |w_j| * step_j
//    with step_j that sum (half_steps);
//  - float accumulation: the kernels sum at most cols/4 + 8 terms per
//    partial sum (plus the products' and the final additions' roundings),
//    so |error| <= (cols/4 + 8) * 2^-23 * sum_j |w_j x_j|, the textbook
//    worst case with a factor 2 to spare.
#pragma once

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "kernel_test_support.h"
#include "kernels/cpu/quant_blocks.h"
#include "kernels/cpu/weight_type.h"

namespace kernel_test {

using namespace kvscope::kernels::cpu;

inline constexpr const auto& kAllTypes = kWeightTypes;

// Values per activation block for the quantized types, 0 for float types.
inline std::size_t act_block(WeightType type) {
    switch (type) {
    case WeightType::F32:
    case WeightType::F16:
    case WeightType::BF16: return 0;
    default: return block_values(type); // 32, or 256 for the super-block types
    }
}

inline void dequantize(WeightType type, const std::byte* row, float* out, std::size_t cols) {
    switch (type) {
    case WeightType::F32: std::memcpy(out, row, cols * 4); return;
    case WeightType::F16: dequantize_row_f16(row, out, cols); return;
    case WeightType::BF16: dequantize_row_bf16(row, out, cols); return;
    case WeightType::Q8_0: dequantize_row_q8_0(row, out, cols); return;
    case WeightType::Q4_0: dequantize_row_q4_0(row, out, cols); return;
    case WeightType::Q5_0: dequantize_row_q5_0(row, out, cols); return;
    case WeightType::Q4_K: dequantize_row_q4_k(row, out, cols); return;
    case WeightType::Q5_K: dequantize_row_q5_k(row, out, cols); return;
    case WeightType::Q6_K: dequantize_row_q6_k(row, out, cols); return;
    case WeightType::Q4_1: dequantize_row_q4_1(row, out, cols); return;
    case WeightType::Q5_1: dequantize_row_q5_1(row, out, cols); return;
    case WeightType::IQ4_NL: dequantize_row_iq4_nl(row, out, cols); return;
    case WeightType::IQ4_XS: dequantize_row_iq4_xs(row, out, cols); return;
    case WeightType::Q2_K: dequantize_row_q2_k(row, out, cols); return;
    case WeightType::Q3_K: dequantize_row_q3_k(row, out, cols); return;
    case WeightType::MXFP4: dequantize_row_mxfp4(row, out, cols); return;
    }
}

// A positive f16 scale between 2^-8 and 2^-5 with a random mantissa.
inline std::uint16_t random_scale(std::mt19937& rng) {
    const auto exponent = static_cast<std::uint16_t>(std::uniform_int_distribution<int>(7, 9)(rng));
    const auto mantissa = static_cast<std::uint16_t>(rng() & 0x3FF);
    return static_cast<std::uint16_t>((exponent << 10) | mantissa);
}

inline void put_u16(std::byte* at, std::uint16_t value) { std::memcpy(at, &value, 2); }

struct Matrix {
    WeightType type;
    std::size_t rows;
    std::size_t cols;
    std::vector<std::byte> bytes;
    std::vector<float> values; // dequantized, rows x cols
};

// Random weights: random codes everywhere, then sane scales (random bytes
// there could be NaN or huge) and, for float types, finite values.
inline Matrix random_matrix(WeightType type, std::size_t rows, std::size_t cols, std::mt19937& rng) {
    Matrix m{type, rows, cols, {}, {}};
    const std::size_t row_bytes = weight_row_bytes(type, cols);
    m.bytes.resize(rows * row_bytes);
    for (std::byte& b : m.bytes)
        b = static_cast<std::byte>(rng());
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    const std::size_t blocks = m.bytes.size() / block_bytes(type);
    for (std::size_t b = 0; b < blocks; ++b) {
        std::byte* block = m.bytes.data() + b * block_bytes(type);
        switch (type) {
        case WeightType::F32: {
            const float v = uniform(rng);
            std::memcpy(block, &v, 4);
            break;
        }
        case WeightType::F16: put_u16(block, kernel_test::f16_bits(uniform(rng))); break;
        case WeightType::BF16: {
            const float v = uniform(rng);
            std::uint32_t bits;
            std::memcpy(&bits, &v, 4);
            put_u16(block, static_cast<std::uint16_t>(bits >> 16));
            break;
        }
        case WeightType::Q8_0:
        case WeightType::Q4_0:
        case WeightType::Q5_0:
        case WeightType::IQ4_NL:
        case WeightType::IQ4_XS: put_u16(block, random_scale(rng)); break;
        case WeightType::Q4_1:
        case WeightType::Q5_1: // d, then a min of either sign
            put_u16(block, random_scale(rng));
            put_u16(block + 2, static_cast<std::uint16_t>(random_scale(rng) | (rng() % 2 ? 0x8000 : 0)));
            break;
        case WeightType::Q4_K:
        case WeightType::Q5_K:
            put_u16(block, random_scale(rng));     // d
            put_u16(block + 2, random_scale(rng)); // dmin
            break;
        case WeightType::Q2_K:
            put_u16(block + offsetof(BlockQ2_K, d), random_scale(rng));
            put_u16(block + offsetof(BlockQ2_K, dmin), random_scale(rng));
            break;
        case WeightType::Q3_K: put_u16(block + offsetof(BlockQ3_K, d), random_scale(rng)); break;
        case WeightType::Q6_K: put_u16(block + offsetof(BlockQ6_K, d), random_scale(rng)); break;
        case WeightType::MXFP4: // E8M0: 2^-9 .. 2^-4 (values up to 12 times that)
            block[offsetof(BlockMXFP4, e)] = static_cast<std::byte>(std::uniform_int_distribution<int>(119, 124)(rng));
            break;
        }
    }
    m.values.resize(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
        dequantize(type, m.bytes.data() + r * row_bytes, m.values.data() + r * cols, cols);
    return m;
}

// Uniform in [-1, 1] with an occasional spike, so blocks differ in range.
inline std::vector<float> random_activations(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> x(n);
    for (float& v : x)
        v = uniform(rng) * (rng() % 17 == 0 ? 8.0f : 1.0f);
    return x;
}

// Activations an 8-bit quantizer represents exactly, for blocks of 32 and
// of 256 alike: x = k * s with |k| <= 127, s a power of two per 256 values,
// and a +-127 in every 32-value block (so d = s exactly).
inline std::vector<float> exact_activations(std::size_t n, std::mt19937& rng) {
    std::uniform_int_distribution<int> code(-127, 127);
    std::vector<float> x(n);
    for (std::size_t b = 0; b < n; b += 256) {
        const float s = std::ldexp(1.0f, -std::uniform_int_distribution<int>(3, 7)(rng));
        for (std::size_t i = b; i < std::min(n, b + 256); ++i)
            x[i] = static_cast<float>(code(rng)) * s;
        for (std::size_t i = b; i < std::min(n, b + 256); i += 32)
            x[i + rng() % 32] = (rng() % 2 ? 127.0f : -127.0f) * s;
    }
    return x;
}

struct Expected {
    double value;       // the exact dot product of the dequantized weights with x
    double quant_error; // bound of the activation quantization's contribution
    double magnitude;   // sum_j |w_j| * |x_j as quantized|, scale of rounding errors

    double rounding(std::size_t cols) const {
        return (static_cast<double>(cols) / 4 + 8) * std::ldexp(1.0, -23) * magnitude;
    }
    double tolerance(std::size_t cols) const { return quant_error + rounding(cols); }
};

// The most each activation value moves when quantized (0 for float weight
// types, whose activations stay floats): half a step, d / 2 = max|x over
// its block| / 254 (plus 2^-14 of it: the rounded float product
// x * (127 / max) is within 127 * 2^-23 of x / d), plus |q| <= 127 times
// the error of the stored d: the float division's 2^-23 d, and for blocks
// of 32 f16's half ulp, at most 2^-11 d or 2^-25 (subnormal).
inline std::vector<double> half_steps(WeightType type, const float* x, std::size_t cols) {
    const std::size_t block = act_block(type);
    std::vector<double> steps(cols, 0.0);
    for (std::size_t start = 0; block != 0 && start < cols; start += block) {
        double amax = 0.0;
        for (std::size_t i = start; i < start + block; ++i)
            amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
        const double d = amax / 127.0;
        const double f16_error = block == 32 ? std::max(std::ldexp(d, -11), std::ldexp(1.0, -25)) : 0.0;
        std::fill(steps.begin() + start, steps.begin() + start + block,
                  d / 2 * (1 + std::ldexp(1.0, -14)) + 127 * (std::ldexp(d, -23) + f16_error));
    }
    return steps;
}

inline Expected expected_dot(const Matrix& m, std::size_t r, const float* x) {
    const float* w = m.values.data() + r * m.cols;
    const std::vector<double> steps = half_steps(m.type, x, m.cols);
    double dot = 0.0;
    double quant_error = 0.0;
    double magnitude = 0.0;
    for (std::size_t j = 0; j < m.cols; ++j) {
        dot += static_cast<double>(w[j]) * x[j];
        quant_error += std::fabs(w[j]) * steps[j];
        magnitude += std::fabs(w[j]) * (std::fabs(x[j]) + steps[j]);
    }
    return {dot, quant_error, magnitude};
}

// MXFP4's scale 2^(e - 128) must reach the kernels exactly for every e,
// subnormal (e < 2) and huge alike: row e (0..255) is one block whose
// value 0 is 12 x 2^(e - 128) (code 7) and the rest 0, and the input's
// value 0 is 127 x 2^k, so its 8-bit code is 127 and its f16 scale 2^k
// exactly, k chosen to keep the product a normal float. Each row's
// output must be 12 x 127 x 2^(e - 128 + k), exactly.
struct EveryMxfp4Exponent {
    Matrix m;
    std::vector<float> x;        // inputs, one per row: X is rows x 32
    std::vector<float> expected; // output of row r for input r
};

inline EveryMxfp4Exponent every_mxfp4_exponent() {
    constexpr std::size_t kRows = 256, kCols = 32;
    EveryMxfp4Exponent t{{WeightType::MXFP4, kRows, kCols, std::vector<std::byte>(kRows * sizeof(BlockMXFP4)), {}},
                         std::vector<float>(kRows * kCols, 0.0f), {}};
    for (std::size_t e = 0; e < kRows; ++e) {
        std::byte* block = t.m.bytes.data() + e * sizeof(BlockMXFP4);
        block[offsetof(BlockMXFP4, e)] = static_cast<std::byte>(e);
        block[offsetof(BlockMXFP4, qs)] = std::byte{7}; // kMxfp4Values[7] = 12
        const int k = e < 128 ? 10 : -14;
        t.x[e * kCols] = std::ldexp(127.0f, k);
        t.expected.push_back(std::ldexp(12.0f * 127.0f, static_cast<int>(e) - 128 + k));
    }
    t.m.values.resize(kRows * kCols);
    dequantize(WeightType::MXFP4, t.m.bytes.data(), t.m.values.data(), kRows * kCols);
    return t;
}

inline void check_against_reference(const Matrix& m, const float* x, const float* y, std::size_t input) {
    for (std::size_t r = 0; r < m.rows; ++r) {
        const Expected e = expected_dot(m, r, x);
        if (!(std::fabs(y[r] - e.value) <= e.tolerance(m.cols))) // NaN fails too
            QFAIL(qPrintable(QStringLiteral("%1 (%2x%3) input %4 row %5: got %6, expected %7 +- %8")
                                 .arg(to_string(m.type).data())
                                 .arg(m.rows).arg(m.cols).arg(input).arg(r)
                                 .arg(static_cast<double>(y[r]), 0, 'g', 9)
                                 .arg(e.value, 0, 'g', 9).arg(e.tolerance(m.cols), 0, 'g', 3)));
    }
}

} // namespace kernel_test

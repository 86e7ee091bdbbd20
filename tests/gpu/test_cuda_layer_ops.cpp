// The CUDA RMSNorm, RoPE, SiLU gate and embedding lookup against their CPU
// twins (kernels/cpu) on the same random inputs. Tolerances:
// - RMSNorm: the GPU sums squares in float in a tree, the CPU in double:
//   relative error of the scale <= ~log2(n) * 6e-8; 1e-5 relative.
// - RoPE: same double-precision angles, cos and sin rounded to float on
//   both; the GPU may fuse a*c - b*s into an FMA: 2 ulp of |a| + |b|, 1e-6.
// - SiLU: CUDA's expf is within 2 ulp of the true value, glibc's within 1,
//   plus a rounded division and multiply on each side: at most ~6 ulp
//   apart, 2e-6 relative.
// - Embedding: a copy (f16 widened exactly): bit-identical.
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu_check.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/layer_ops.h"
#include "kv_pool_pair.h"

namespace cuda = kvscope::kernels::cuda;
namespace cpu = kvscope::kernels::cpu;

namespace {

// max_i |a_i - b_i| / max(|b_i|, floor)
double worst_relative(const std::vector<float>& a, const std::vector<float>& b, double floor = 1e-3) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i]) != std::isnan(b[i]))
            return INFINITY;
        worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max<double>(std::fabs(b[i]), floor));
    }
    return worst;
}

void rms_norm_matches() {
    std::mt19937 rng(31);
    for (const std::uint32_t n : {64u, 1000u, 4096u}) {
        const std::uint32_t rows = 5;
        const std::vector<float> x = gpu_check::random_floats(std::size_t{rows} * n, rng, 4.0f);
        const std::vector<float> w = gpu_check::random_floats(n, rng);
        std::vector<float> expected(x.size());
        for (std::uint32_t r = 0; r < rows; ++r)
            cpu::rms_norm(x.data() + std::size_t{r} * n, w.data(), n, 1e-5f, expected.data() + std::size_t{r} * n);
        cuda::DeviceBuffer x_d = cuda::upload_vector(x), w_d = cuda::upload_vector(w);
        cuda::rms_norm(x_d.as<float>(), w_d.as<float>(), rows, n, 1e-5f, x_d.as<float>()); // in place
        const double err = worst_relative(cuda::download_vector<float>(x_d, x.size()), expected);
        GPU_CHECK(err < 1e-5, "n=" + std::to_string(n) + ": relative error " + std::to_string(err));
    }
}

void rope_matches() {
    std::mt19937 rng(32);
    for (const auto style : {cpu::RopeStyle::AdjacentPairs, cpu::RopeStyle::Halves})
        for (const std::uint32_t rot_dim : {64u, 32u}) { // full and partial rotary
            const std::uint32_t tokens = 7, heads = 4, head_dim = 64;
            const std::vector<std::uint32_t> positions{0, 1, 17, 500, 4095, 32767, 131071};
            std::vector<float> x = gpu_check::random_floats(std::size_t{tokens} * heads * head_dim, rng);
            cuda::DeviceBuffer x_d = cuda::upload_vector(x), pos_d = cuda::upload_vector(positions);
            cuda::rope(x_d.as<float>(), pos_d.as<std::uint32_t>(), tokens, heads, head_dim, rot_dim, 500000.0f, style);
            for (std::uint32_t t = 0; t < tokens; ++t)
                cpu::rope(x.data() + std::size_t{t} * heads * head_dim, heads, head_dim, rot_dim, positions[t],
                          500000.0f, style);
            // Absolute error against values of size ~1 (rotations keep norms).
            const double err = worst_relative(cuda::download_vector<float>(x_d, x.size()), x, 1.0);
            GPU_CHECK(err < 1e-6, "rot_dim=" + std::to_string(rot_dim) + ": error " + std::to_string(err));
        }
    gpu_check::expect_throw<std::invalid_argument>(
        [] { cuda::rope(nullptr, nullptr, 1, 1, 8, 10, 10000.0f, cpu::RopeStyle::Halves); }, "rot_dim",
        "rot_dim over head_dim");
}

void silu_mul_matches() {
    std::mt19937 rng(33);
    const std::size_t n = 100003;
    std::vector<float> gate = gpu_check::random_floats(n, rng, 20.0f);
    gate[0] = -200.0f; // exp overflows: the limit is -0
    const std::vector<float> up = gpu_check::random_floats(n, rng, 2.0f);
    std::vector<float> expected(n);
    cpu::silu_mul(gate.data(), up.data(), expected.data(), n);
    cuda::DeviceBuffer g_d = cuda::upload_vector(gate), u_d = cuda::upload_vector(up), o_d(n * sizeof(float));
    cuda::silu_mul(g_d.as<float>(), u_d.as<float>(), o_d.as<float>(), n);
    const double err = worst_relative(cuda::download_vector<float>(o_d, n), expected, 1e-6);
    GPU_CHECK(err < 2e-6, "relative error " + std::to_string(err));
}

void embedding_matches() {
    std::mt19937 rng(34);
    const std::uint32_t vocab = 300, dim = 96;
    const std::vector<float> table = gpu_check::random_floats(std::size_t{vocab} * dim, rng);
    std::vector<std::uint16_t> table16(table.size());
    for (std::size_t i = 0; i < table.size(); ++i)
        table16[i] = cpu::f32_to_f16(table[i]);
    const std::vector<std::uint32_t> tokens{5, 299, 0, 5, 300}; // 300: out of range, a NaN row
    cuda::DeviceBuffer t32 = cuda::upload_vector(table), t16 = cuda::upload_vector(table16);
    cuda::DeviceBuffer tok = cuda::upload_vector(tokens), out(tokens.size() * dim * sizeof(float));
    for (const auto type : {cuda::EmbeddingType::F32, cuda::EmbeddingType::F16}) {
        const bool f16 = type == cuda::EmbeddingType::F16;
        cuda::embedding_rows(f16 ? t16.data() : t32.data(), type, vocab, dim, tok.as<std::uint32_t>(),
                             static_cast<std::uint32_t>(tokens.size()), out.as<float>());
        const std::vector<float> got = cuda::download_vector<float>(out, tokens.size() * dim);
        for (std::size_t t = 0; t < tokens.size(); ++t)
            for (std::uint32_t i = 0; i < dim; ++i) {
                const float value = got[t * dim + i];
                if (tokens[t] >= vocab) {
                    GPU_CHECK(std::isnan(value), "an out-of-range token must give NaN");
                    continue;
                }
                const std::size_t at = std::size_t{tokens[t]} * dim + i;
                const float want = f16 ? cpu::f16_to_f32(table16[at]) : table[at];
                GPU_CHECK(value == want, std::string(f16 ? "f16" : "f32") + " row " + std::to_string(t) + " differs");
            }
    }
}

} // namespace

int main() {
    return gpu_check::run("test_cuda_layer_ops", {
                                                     {"rms_norm", rms_norm_matches},
                                                     {"rope, both styles, partial", rope_matches},
                                                     {"silu_mul", silu_mul_matches},
                                                     {"embedding rows", embedding_matches},
                                                 });
}

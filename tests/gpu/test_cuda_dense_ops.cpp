// The CUDA matrix product, residual and bias additions and device copies
// (kernels/cuda/dense_ops.h) against a double-precision reference on random
// inputs. Tolerance of the product: both sides see the same f32 (or
// f16-rounded) weights and f32 activations; the GPU sums in f32 in a
// different order, each partial sum off by at most cols * 2^-24 of the sum
// of |w x| terms, so |error| <= 1e-5 * sum |w x| (cols <= 1000 here: the
// bound is 6e-5, the typical error far smaller). Additions are exact.
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu_check.h"
#include "kernels/cpu/float16.h"
#include "kernels/cpu/float16_encode.h"
#include "kernels/cuda/dense_ops.h"
#include "kernels/cuda/device_buffer.h"
#include "kv_pool_pair.h"

namespace cuda = kvscope::kernels::cuda;
namespace cpu = kvscope::kernels::cpu;

namespace {

void matmul_matches(cuda::DenseType type) {
    std::mt19937 rng(type == cuda::DenseType::F32 ? 41 : 42);
    for (const std::uint32_t rows : {1u, 7u, 130u})
        for (const std::uint32_t cols : {2u, 64u, 1000u})
            for (const std::uint32_t n : {1u, 3u, 9u, 17u}) {
                std::vector<float> w = gpu_check::random_floats(std::size_t{rows} * cols, rng);
                const std::vector<float> x = gpu_check::random_floats(std::size_t{n} * cols, rng, 2.0f);
                std::vector<std::uint16_t> w16(w.size());
                for (std::size_t i = 0; i < w.size(); ++i) {
                    w16[i] = cpu::f32_to_f16(w[i]);
                    if (type == cuda::DenseType::F16)
                        w[i] = cpu::f16_to_f32(w16[i]); // the reference sees what the GPU sees
                }
                cuda::DeviceBuffer w_d = type == cuda::DenseType::F32 ? cuda::upload_vector(w) : cuda::upload_vector(w16);
                cuda::DeviceBuffer x_d = cuda::upload_vector(x);
                cuda::DeviceBuffer out_d(std::size_t{n} * rows * sizeof(float));
                cuda::matmul(w_d.data(), type, rows, cols, x_d.as<float>(), n, out_d.as<float>());
                const std::vector<float> out = cuda::download_vector<float>(out_d, std::size_t{n} * rows);
                for (std::uint32_t t = 0; t < n; ++t)
                    for (std::uint32_t r = 0; r < rows; ++r) {
                        double exact = 0.0, magnitude = 0.0;
                        for (std::uint32_t c = 0; c < cols; ++c) {
                            const double term = double{w[std::size_t{r} * cols + c]} * x[std::size_t{t} * cols + c];
                            exact += term;
                            magnitude += std::fabs(term);
                        }
                        const double err = std::fabs(out[std::size_t{t} * rows + r] - exact);
                        GPU_CHECK(err <= 1e-5 * magnitude + 1e-30,
                                  "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " n=" +
                                      std::to_string(n) + ": error " + std::to_string(err) + " at token " +
                                      std::to_string(t) + ", row " + std::to_string(r));
                    }
            }
}

void matmul_refuses_odd_columns() {
    cuda::DeviceBuffer buffer(64);
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::matmul(buffer.data(), cuda::DenseType::F32, 1, 3, buffer.as<float>(), 1, buffer.as<float>()); },
        "even", "3 columns");
}

void additions_are_exact() {
    std::mt19937 rng(43);
    const std::uint32_t rows = 5, width = 77;
    const std::vector<float> x = gpu_check::random_floats(std::size_t{rows} * width, rng);
    const std::vector<float> y = gpu_check::random_floats(x.size(), rng);
    const std::vector<float> bias = gpu_check::random_floats(width, rng);
    cuda::DeviceBuffer x_d = cuda::upload_vector(x), y_d = cuda::upload_vector(y), b_d = cuda::upload_vector(bias);
    cuda::add_in_place(x_d.as<float>(), y_d.as<float>(), x.size());
    cuda::add_bias(x_d.as<float>(), b_d.as<float>(), rows, width);
    const std::vector<float> got = cuda::download_vector<float>(x_d, x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        GPU_CHECK(got[i] == (x[i] + y[i]) + bias[i % width], "element " + std::to_string(i));
}

void copies_round_trip() {
    std::vector<float> host = {1.0f, 2.0f, 3.0f, 4.0f};
    cuda::DeviceBuffer a(host.size() * sizeof(float)), b(host.size() * sizeof(float));
    cuda::copy_bytes(a.data(), host.data(), 16);          // host to device
    cuda::copy_bytes_async(b.data(), a.data(), 16);       // device to device
    std::vector<float> back(4, 0.0f);
    cuda::copy_bytes(back.data(), b.data(), 16);          // device to host
    GPU_CHECK(back == host, "the bytes came back changed");
}

} // namespace

int main() {
    return gpu_check::run("test_cuda_dense_ops", {
                                                     {"matmul, f32 weights", [] { matmul_matches(cuda::DenseType::F32); }},
                                                     {"matmul, f16 weights", [] { matmul_matches(cuda::DenseType::F16); }},
                                                     {"matmul refuses odd columns", matmul_refuses_odd_columns},
                                                     {"residual and bias additions", additions_are_exact},
                                                     {"copies", copies_round_trip},
                                                 });
}

// cuda::paged_attention against cpu::paged_attention (the reference) on the
// same pool bytes: written once by cpu::write_kv into a NaN-filled pool
// (0xFF bytes), uploaded, read by both. Reading any row that was not
// written (another layer, a slot past the context, a block outside the
// table) turns the output into NaN and fails.
//
// KIVI pools come with a tail per sequence (positions past its last full
// block, in f16), written and read on both sides.
//
// Tolerance, the same for every KV dtype: both kernels decode identical
// bytes with identical scales, so quantization error cancels out of the
// comparison; what is left is float arithmetic in a different order (the
// GPU sums scores over 8-value lanes and splits of up to 512 positions,
// uses expf and float softmax sums where the CPU sums in double). With
// |q|, |k|, |v| <= 1 and at most ~3000 positions each output differs by a
// few float epsilons times the number of terms summed at worst:
// 3000 * 6e-8 = 1.8e-4, typically far less. We allow 2e-4 absolute on
// outputs that are weighted means of values in [-1, 1] (int4's zero points
// keep decoded values within [-1, 1] too); a wrong row, head or block shows
// as an error of order 0.1.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu_check.h"
#include "kernels/cpu/kv_write.h"
#include "kernels/cpu/paged_attention.h"
#include "kernels/cuda/paged_attention.h"
#include "kv_pool_pair.h"

namespace cuda = kvscope::kernels::cuda;
namespace cpu = kvscope::kernels::cpu;
using gpu_check::KvPoolPair;
using kvscope::KvDtype;

namespace {

constexpr double kTolerance = 2e-4;

// One sequence's share of a batch: its context and its queries (the last
// n_q positions: 1 for decode, more for a prefill chunk).
struct SeqSpec {
    std::uint32_t ctx_len;
    std::uint32_t n_q;
};

struct Case {
    KvDtype dtype;
    std::uint32_t n_kv_heads, group, head_dim, block_size;
    std::vector<SeqSpec> seqs;
    bool paged = true;
};

std::string describe(const Case& c) {
    std::string s = gpu_check::shape_name(c.dtype, c.n_kv_heads, c.head_dim, c.block_size) +
                    " group=" + std::to_string(c.group) + (c.paged ? " paged" : " contiguous") + " seqs=";
    for (const SeqSpec& q : c.seqs)
        s += std::to_string(q.ctx_len) + "/" + std::to_string(q.n_q) + " ";
    return s;
}

// Runs one case: every sequence's K/V written by the CPU, all queries in one
// GPU call, each sequence's queries through the CPU kernel.
void compare(const Case& c, std::mt19937& rng) {
    const std::uint32_t n_heads = c.n_kv_heads * c.group;
    std::uint32_t table_stride = 0, max_context = 0;
    for (const SeqSpec& s : c.seqs) {
        table_stride = std::max(table_stride, (s.ctx_len + c.block_size - 1) / c.block_size);
        max_context = std::max(max_context, s.ctx_len);
    }
    const auto n_seqs = static_cast<std::uint32_t>(c.seqs.size());
    // Paged: twice the blocks needed, handed out in shuffled order, so
    // tables are never consecutive. Contiguous: exactly stride per sequence.
    const std::size_t n_blocks = c.paged ? 2 * std::size_t{n_seqs} * table_stride + 3 : std::size_t{n_seqs} * table_stride;
    KvPoolPair pools({KvPoolPair::kLayers, c.n_kv_heads, c.head_dim}, c.dtype, c.block_size, n_blocks, rng);
    std::vector<std::uint32_t> ids(n_blocks);
    std::iota(ids.begin(), ids.end(), 0u);
    if (c.paged)
        std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<std::uint32_t> tables(std::size_t{n_seqs} * table_stride);
    std::copy_n(ids.begin(), tables.size(), tables.begin());

    // KIVI: each sequence's f16 tail, holding its positions past the last
    // full block.
    const std::size_t tail_bytes = pools.layout.tail_bytes();
    std::vector<std::byte> host_tails(n_seqs * tail_bytes, std::byte{0xFF});

    const cpu::PagedKv host_kv = pools.cpu_view();
    const std::size_t kv_row = std::size_t{c.n_kv_heads} * c.head_dim, q_row = std::size_t{n_heads} * c.head_dim;
    std::vector<float> q_all, expected;
    std::vector<std::uint32_t> query_seq, query_pos;
    for (std::uint32_t s = 0; s < n_seqs; ++s) {
        const SeqSpec& spec = c.seqs[s];
        const std::vector<float> k = gpu_check::random_floats(spec.ctx_len * kv_row, rng);
        const std::vector<float> v = gpu_check::random_floats(spec.ctx_len * kv_row, rng);
        const std::uint32_t* table = tables.data() + std::size_t{s} * table_stride;
        std::byte* tail = tail_bytes > 0 ? host_tails.data() + s * tail_bytes : nullptr;
        for (std::uint32_t p = 0; p < spec.ctx_len; ++p)
            cpu::write_kv(host_kv, table[p / c.block_size], p % c.block_size, k.data() + p * kv_row,
                          v.data() + p * kv_row, tail);
        const std::vector<float> q = gpu_check::random_floats(spec.n_q * q_row, rng);
        std::vector<float> out(q.size());
        std::vector<float> scratch(cpu::paged_attention_scratch_floats(spec.ctx_len, c.head_dim, 1));
        cpu::paged_attention(host_kv, std::span<const std::uint32_t>(table, table_stride), spec.ctx_len, q.data(),
                             spec.n_q, n_heads, out.data(), scratch, 1, tail);
        q_all.insert(q_all.end(), q.begin(), q.end());
        expected.insert(expected.end(), out.begin(), out.end());
        for (std::uint32_t i = 0; i < spec.n_q; ++i) {
            query_seq.push_back(s);
            query_pos.push_back(spec.ctx_len - spec.n_q + i);
        }
    }
    pools.upload();

    const cpu::PagedKv device_kv = pools.cuda_view();
    cuda::check_attention_batch(device_kv, query_seq, query_pos, max_context,
                                c.paged ? tables : std::vector<std::uint32_t>(), table_stride, n_seqs);
    cuda::DeviceBuffer q_d = cuda::upload_vector(q_all), out_d(q_all.size() * sizeof(float));
    cuda::DeviceBuffer seq_d = cuda::upload_vector(query_seq), pos_d = cuda::upload_vector(query_pos);
    cuda::DeviceBuffer tables_d = cuda::upload_vector(tables);
    cuda::DeviceBuffer tails_d = cuda::upload_vector(host_tails);
    std::vector<const std::byte*> tail_of_seq;
    std::vector<std::uint32_t> seq_context;
    for (std::uint32_t s = 0; s < n_seqs; ++s) {
        tail_of_seq.push_back(tails_d.as<const std::byte>() + s * tail_bytes);
        seq_context.push_back(c.seqs[s].ctx_len);
    }
    cuda::DeviceBuffer tail_of_seq_d = cuda::upload_vector(tail_of_seq), seq_context_d = cuda::upload_vector(seq_context);
    out_d.fill_bytes(0xFF);
    cuda::AttentionBatch batch;
    batch.q = q_d.as<float>();
    batch.out = out_d.as<float>();
    batch.n_queries = static_cast<std::uint32_t>(query_seq.size());
    batch.n_heads = n_heads;
    batch.seq = seq_d.as<std::uint32_t>();
    batch.position = pos_d.as<std::uint32_t>();
    batch.max_context = max_context;
    batch.block_tables = c.paged ? tables_d.as<std::uint32_t>() : nullptr;
    batch.table_stride = table_stride;
    if (tail_bytes > 0) {
        batch.tails = tail_of_seq_d.as<const std::byte*>();
        batch.seq_context = seq_context_d.as<std::uint32_t>();
    }
    cuda::DeviceBuffer workspace(cuda::attention_workspace_bytes(device_kv, batch));
    cuda::paged_attention(device_kv, batch, workspace.data(), workspace.size());
    cuda::synchronize();
    const std::vector<float> got = cuda::download_vector<float>(out_d, q_all.size());

    double worst = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - expected[i]);
        GPU_CHECK(!std::isnan(got[i]), describe(c) + ": NaN at output " + std::to_string(i) +
                                           " (an unwritten row was read, or the output was not written)");
        worst = std::max(worst, err);
    }
    GPU_CHECK(worst <= kTolerance, describe(c) + ": max |gpu - cpu| = " + std::to_string(worst));
}

// Random shapes over every dtype, GQA ratio and block size; contexts that
// end mid-block; several sequences of different lengths decoding together.
void decode_batches() {
    std::mt19937 rng(21);
    const std::uint32_t groups[] = {1, 2, 4, 8};
    const std::uint32_t block_sizes[] = {8, 16, 32};
    const std::uint32_t head_dims[] = {8, 64, 128};
    for (const KvDtype dtype : gpu_check::all_kv_dtypes())
        for (const std::uint32_t group : groups)
            for (const std::uint32_t block_size : block_sizes) {
                Case c{dtype, static_cast<std::uint32_t>(1 + rng() % 3), group, head_dims[rng() % 3], block_size, {}};
                for (int s = 0; s < 3; ++s)
                    c.seqs.push_back({1 + static_cast<std::uint32_t>(rng() % 300), 1});
                compare(c, rng);
            }
}

// Prefill chunks after a cached prefix, causal, next to decode queries in
// the same batch.
void prefill_chunks() {
    std::mt19937 rng(22);
    for (const KvDtype dtype : gpu_check::all_kv_dtypes())
        for (const std::uint32_t group : {1u, 4u}) {
            Case c{dtype, 2, group, 64, 16, {{77, 77}, {150, 21}, {33, 1}}};
            compare(c, rng);
        }
}

// Contexts long enough to be split across thread blocks and merged, and
// 16 query heads per KV head (more than one thread block's 8).
void long_contexts_and_wide_groups() {
    std::mt19937 rng(23);
    for (const KvDtype dtype : gpu_check::all_kv_dtypes()) {
        compare({dtype, 2, 4, 128, 16, {{3001, 1}, {1500, 1}, {9, 1}}}, rng);
        compare({dtype, 1, 16, 64, 32, {{700, 1}, {64, 3}}}, rng);
    }
}

// Without a table: each sequence in its own consecutive blocks.
void contiguous_allocation() {
    std::mt19937 rng(24);
    for (const KvDtype dtype : gpu_check::all_kv_dtypes()) {
        Case c{dtype, 2, 2, 64, 16, {{200, 1}, {1100, 1}, {45, 5}}};
        c.paged = false;
        compare(c, rng);
    }
}

void clear_errors() {
    std::mt19937 rng(25);
    KvPoolPair pools({KvPoolPair::kLayers, 2, 64}, KvDtype::F16, 16, 8, rng);
    const cpu::PagedKv kv = pools.cuda_view();
    // One sequence, 4 table entries, a pool of 8 blocks: position 40 reaches
    // the third entry, block 9.
    const std::vector<std::uint32_t> table{0, 1, 9, 3};
    cuda::check_attention_batch(kv, {0}, {31}, 64, table, 4, 1); // blocks 0 and 1 only: fine
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::check_attention_batch(kv, {0}, {40}, 64, table, 4, 1); }, "block 9", "a table entry past the pool");
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::check_attention_batch(kv, {0}, {70}, 128, table, 4, 1); }, "needs 5 blocks",
        "a position past the table row");
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::check_attention_batch(kv, {0}, {70}, 64, table, 4, 1); }, "position 70", "a position past max_context");
    gpu_check::expect_throw<std::invalid_argument>(
        [&] { cuda::check_attention_batch(kv, {2}, {3}, 64, table, 4, 1); }, "sequence 2", "a sequence id past the batch");
    cuda::AttentionBatch batch;
    batch.n_heads = 3;
    gpu_check::expect_throw<std::invalid_argument>([&] { cuda::paged_attention(kv, batch, nullptr, 0); },
                                                   "not a multiple", "3 query heads over 2 KV heads");
    KvPoolPair kivi({KvPoolPair::kLayers, 2, 64}, KvDtype::Int2Kivi, 16, 8, rng);
    const cuda::DeviceBuffer q(4 * 64 * sizeof(float)), ids(sizeof(std::uint32_t));
    batch.q = q.as<float>();
    batch.out = q.as<float>() + 1;
    batch.n_queries = 1;
    batch.n_heads = 4;
    batch.seq = ids.as<std::uint32_t>();
    batch.position = ids.as<std::uint32_t>();
    batch.max_context = 1;
    batch.table_stride = 1;
    gpu_check::expect_throw<std::invalid_argument>([&] { cuda::paged_attention(kivi.cuda_view(), batch, nullptr, 0); },
                                                   "tail", "a KIVI batch without tails");
}

} // namespace

int main() {
    return gpu_check::run("test_cuda_paged_attention", {
                                                           {"decode batches", decode_batches},
                                                           {"prefill chunks", prefill_chunks},
                                                           {"long contexts, wide groups", long_contexts_and_wide_groups},
                                                           {"contiguous allocation", contiguous_allocation},
                                                           {"clear errors", clear_errors},
                                                       });
}

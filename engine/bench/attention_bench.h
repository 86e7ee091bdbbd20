// engine/bench: the attention kernel alone, per KV dtype and context
// length, through a block table over shuffled blocks (paged) and over the
// same data in consecutive blocks with no table (contiguous), in the same
// run, so that the price of the page-table indirection is a measured ratio
// (`kvscope-cli bench attention` prints it).
//
// One call is one step of one layer for the whole batch: every sequence's
// last `queries` tokens (all query heads) attend causally over its
// `context` cached tokens, those queries' own included: 1 query is a decode
// step, more a prompt chunk (the kernel's prompt path). Bytes moved per call are the cached K/V rows and scales
// the kernel reads, counted by KvLayout. Each figure is the median of
// `repeats` timings; a timing runs calls until at least 20 ms have passed.
// Paged and contiguous timings alternate so that drift (other processes,
// frequency changes) hits both alike.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kv/kv_dtype.h"

namespace kvscope {

struct AttentionBenchShape {
    std::uint32_t heads, kv_heads, head_dim, block_size, batch, repeats;
    std::uint32_t queries = 1; // per sequence, at most the smallest context
};

// One timing: (dtype, context) through the block table or without.
struct AttentionBenchRow {
    KvDtype dtype;
    std::uint32_t context;
    bool paged;
    double seconds; // per call
    double bytes;   // per call
};

// The CPU kernel on `threads` threads: rows in (paged, contiguous) pairs,
// for each dtype, for each context. Throws kvscope::Error for a context
// shorter than shape.queries.
std::vector<AttentionBenchRow> bench_cpu_attention(const AttentionBenchShape& shape,
                                                   const std::vector<KvDtype>& dtypes,
                                                   const std::vector<std::uint32_t>& contexts, int threads);

// The CUDA kernel on the same shapes, timed by CUDA events
// (kernels/cuda/attention_bench.h: mean of 20 calls after 3 untimed), and
// in `copy_gb_s` a device-to-device copy of 1 GiB as the bandwidth ceiling.
// Throws kvscope::Error in builds without CUDA, for a CUDA failure and for
// more than one query (the CUDA bench times decode only).
std::vector<AttentionBenchRow> bench_cuda_attention(const AttentionBenchShape& shape,
                                                    const std::vector<KvDtype>& dtypes,
                                                    const std::vector<std::uint32_t>& contexts, double& copy_gb_s);

} // namespace kvscope

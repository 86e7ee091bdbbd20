#include "kernels/cuda/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cuda/cuda_check.cuh"
#include "kernels/cuda/kv_device_codes.cuh"

namespace kvscope::kernels::cuda {
namespace {

using detail::ChunkScale;
using detail::Code;
using detail::RawChunk;

constexpr unsigned kWarp = 32;
constexpr unsigned kWarps = 4;
constexpr unsigned kThreads = kWarps * kWarp;
constexpr unsigned kMaxHeads = 8;   // query heads of one KV head per thread block (more: several blocks)
// Rows each lane loads before it uses the first: 4 for f32/f16/bf16, more
// for the narrow formats so that a warp keeps more bytes in flight
// (registers cap it at 16); 4 for KIVI, whose lanes also carry where each
// row comes from (pool or tail) and the keys' channel-scale pointers.
template <Code C, bool Tailed>
constexpr unsigned kInFlight = Tailed || detail::chunk_bytes(C) >= 16 ? 4 : detail::chunk_bytes(C) == 8 ? 8 : 16;
constexpr unsigned kMaxSplit = 512; // positions per thread block
constexpr unsigned kMinSplit = 64;
constexpr unsigned kFull = 0xFFFFFFFFu;

// Where one of K or V of the layer lives (cpu::PagedKv's numbers).
struct Part {
    std::size_t offset, scale_offset, scale_head_stride, scale_slot_stride;
    const float* fixed;       // fp8: this part's per-head scales
    std::size_t tail_offset;  // KIVI: this layer's rows of this part inside a tail
};

struct Params {
    const unsigned char* pool;
    std::size_t bytes_per_block, head_stride, slot_stride;
    Part k, v;
    unsigned block_size, head_dim, n_heads, group;
    unsigned lanes_per_row; // power of two >= head_dim / 8: the lanes that share one row
    unsigned cta_heads;     // min(group, kMaxHeads): the shared-memory stride in heads
    bool aligned;           // every row starts on a multiple of its chunk's load width
    float scale;            // 1 / sqrt(head_dim)
    const float* q;
    float* out;
    const std::uint32_t* seq;
    const std::uint32_t* position;
    const std::uint32_t* block_tables;
    unsigned table_stride;
    unsigned split, max_splits;
    float* partial_acc; // [query][head][split][head_dim]: unnormalized sums of p * V
    float* partial_max; // [query][head][split]: the split's max score
    float* partial_sum; // [query][head][split]: its sum of exp(score - max)
    // KIVI: per sequence its f16 tail and context length; tail strides.
    const std::byte* const* tails;
    const std::uint32_t* seq_context;
    std::size_t tail_head_stride, tail_slot_stride;
};

struct RowAddress {
    const unsigned char* row;
    const unsigned char* scales;
};

// Position t of sequence `seq`, KV head `kv_head`: through the block table,
// or at consecutive blocks when there is none.
__device__ __forceinline__ RowAddress locate(const Params& p, const Part& part, unsigned seq, unsigned kv_head,
                                             unsigned t) {
    const unsigned logical = t / p.block_size, slot = t % p.block_size;
    const std::size_t index = std::size_t{seq} * p.table_stride + logical;
    const std::size_t block = p.block_tables ? __ldg(p.block_tables + index) : index;
    const unsigned char* base = p.pool + block * p.bytes_per_block;
    return {base + part.offset + kv_head * p.head_stride + slot * p.slot_stride,
            base + part.scale_offset + kv_head * part.scale_head_stride + slot * part.scale_slot_stride};
}

// KIVI: where a sequence's unsealed positions are (its f16 tail) and from
// which position on.
struct Tail {
    const unsigned char* rows = nullptr; // the tail's rows of this layer's K or V
    unsigned sealed = 0xFFFFFFFFu;       // positions from here on are in the tail
};

// One lane's chunk of one row, loaded and waiting to be decoded.
struct LoadedChunk {
    RawChunk raw;
    ChunkScale scale;                     // formats with per-row scales
    const unsigned char* channel_scales;  // KIVI keys: the block's per-channel scales
    bool from_tail;                       // KIVI: an f16 row of the tail
};

template <Code C, bool Tailed>
__device__ __forceinline__ void load_row(const Params& p, const Part& part, const Tail& tail, unsigned seq,
                                         unsigned kv_head, unsigned t, unsigned chunk, LoadedChunk& c) {
    if (Tailed && t >= tail.sealed) {
        c.from_tail = true;
        const unsigned char* row = tail.rows + kv_head * p.tail_head_stride + (t - tail.sealed) * p.tail_slot_stride;
        detail::load_chunk<Code::F16>(row, chunk, false, c.raw); // a few rows per sequence: byte loads will do
        return;
    }
    c.from_tail = false;
    const RowAddress r = locate(p, part, seq, kv_head, t);
    detail::load_chunk<C>(r.row, chunk, p.aligned, c.raw);
    if constexpr (detail::per_channel(C))
        c.channel_scales = r.scales;
    else
        c.scale = detail::load_scale<C>(r.scales, part.fixed + kv_head, chunk);
}

template <Code C, bool Tailed>
__device__ __forceinline__ void decode_row(const LoadedChunk& c, unsigned chunk, unsigned head_dim, float (&x)[8]) {
    if (Tailed && c.from_tail)
        detail::decode_chunk<Code::F16>(c.raw, ChunkScale{}, x);
    else if constexpr (detail::per_channel(C))
        detail::decode_channel_chunk<C>(c.raw, c.channel_scales, chunk, head_dim, x);
    else
        detail::decode_chunk<C>(c.raw, c.scale, x);
}

__device__ __forceinline__ float warp_max(float x) {
    for (unsigned o = kWarp / 2; o > 0; o /= 2)
        x = fmaxf(x, __shfl_xor_sync(kFull, x, o));
    return x;
}

__device__ __forceinline__ float warp_sum(float x) {
    for (unsigned o = kWarp / 2; o > 0; o /= 2)
        x += __shfl_xor_sync(kFull, x, o);
    return x;
}

// One thread block: positions [begin, end) of one query's context, one KV
// head and up to kMaxHeads of the query heads that share it (so each K/V
// row is read once for all of them).
//
// Lanes are grouped lanes_per_row to a row: lane `chunk` of a group reads
// values [8 chunk, 8 chunk + 8) of the row, so a warp reads
// 32 / lanes_per_row consecutive rows, coalesced, and each lane issues
// kInFlight independent loads before it decodes the first.
//
//   scores   s_t = (q . k_t) / sqrt(d)          (dot product: a lane's 8
//            values, then a shuffle sum over the row's lanes)
//   softmax  m = max_t s_t, p_t = exp(s_t - m), l = sum_t p_t
//   values   acc = sum_t p_t v_t                (per lane, then over lanes
//            and warps)
// One split: out = acc / l. Several: (acc, m, l) go to the workspace and
// merge_splits combines them.
//
// K and V decode as KC and VC (they differ for KIVI, whose positions from
// the sequence's last full block on come from its f16 tail).
template <Code KC, Code VC>
__global__ void __launch_bounds__(kThreads) attention_split_kernel(const Params p) {
    constexpr bool tailed = detail::per_channel(KC);
    extern __shared__ float smem[];
    const unsigned query = blockIdx.x;
    const unsigned count = p.position[query] + 1; // causal: up to and including its own position
    const unsigned begin = blockIdx.z * p.split;
    if (begin >= count)
        return; // this query's context has fewer splits than the longest
    const unsigned end = min(count, begin + p.split);
    const unsigned splits = (count + p.split - 1) / p.split;
    const unsigned subgroups = (p.group + kMaxHeads - 1) / kMaxHeads;
    const unsigned kv_head = blockIdx.y / subgroups;
    const unsigned first_in_group = blockIdx.y % subgroups * kMaxHeads;
    const unsigned heads = min(kMaxHeads, p.group - first_in_group);
    const unsigned first_head = kv_head * p.group + first_in_group;
    const unsigned seq = p.seq[query];
    const unsigned d = p.head_dim;
    Tail k_tail, v_tail;
    if constexpr (tailed) {
        const auto* tail = reinterpret_cast<const unsigned char*>(p.tails[seq]);
        const unsigned sealed = p.seq_context[seq] / p.block_size * p.block_size;
        k_tail = {tail + p.k.tail_offset, sealed};
        v_tail = {tail + p.v.tail_offset, sealed};
    }

    float* q_s = smem;                           // [cta_heads][d]
    float* scores = q_s + p.cta_heads * d;       // [cta_heads][split]
    float* out_s = scores + p.cta_heads * p.split; // [cta_heads][d]
    float* stats = out_s + p.cta_heads * d;      // max[kMaxHeads], sum[kMaxHeads]

    const float* q = p.q + (std::size_t{query} * p.n_heads + first_head) * d;
    for (unsigned i = threadIdx.x; i < heads * d; i += kThreads) {
        q_s[i] = q[i];
        out_s[i] = 0.0f;
    }
    __syncthreads();

    const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const unsigned rows_per_warp = kWarp / p.lanes_per_row;
    const unsigned row_in_warp = lane / p.lanes_per_row;
    const unsigned chunk = lane % p.lanes_per_row;
    const bool has_chunk = chunk * 8 < d;

    // Scores.
    constexpr unsigned k_flight = kInFlight<KC, tailed>;
    for (unsigned t0 = begin + warp * rows_per_warp * k_flight; t0 < end; t0 += kWarps * rows_per_warp * k_flight) {
        LoadedChunk c[k_flight] = {};
#pragma unroll
        for (unsigned u = 0; u < k_flight; ++u) {
            const unsigned t = t0 + u * rows_per_warp + row_in_warp;
            if (t < end && has_chunk)
                load_row<KC, tailed>(p, p.k, k_tail, seq, kv_head, t, chunk, c[u]);
        }
#pragma unroll
        for (unsigned u = 0; u < k_flight; ++u) {
            const unsigned t = t0 + u * rows_per_warp + row_in_warp;
            const bool valid = t < end && has_chunk;
            float x[8] = {};
            if (valid)
                decode_row<KC, tailed>(c[u], chunk, d, x);
#pragma unroll
            for (unsigned h = 0; h < kMaxHeads; ++h) {
                if (h >= heads)
                    break;
                float dot = 0.0f;
                if (valid) {
                    const float4* qv = reinterpret_cast<const float4*>(q_s + h * d + chunk * 8);
                    const float4 a = qv[0], b = qv[1];
                    dot = a.x * x[0] + a.y * x[1] + a.z * x[2] + a.w * x[3] + b.x * x[4] + b.y * x[5] +
                          b.z * x[6] + b.w * x[7];
                }
                for (unsigned o = p.lanes_per_row / 2; o > 0; o /= 2)
                    dot += __shfl_xor_sync(kFull, dot, o);
                if (chunk == 0 && t < end)
                    scores[h * p.split + (t - begin)] = dot * p.scale;
            }
        }
    }
    __syncthreads();

    // Softmax over this split, one warp per head.
    const unsigned n = end - begin;
    for (unsigned h = warp; h < heads; h += kWarps) {
        float* s = scores + h * p.split;
        float m = -INFINITY;
        for (unsigned j = lane; j < n; j += kWarp)
            m = fmaxf(m, s[j]);
        m = warp_max(m);
        float l = 0.0f;
        for (unsigned j = lane; j < n; j += kWarp) {
            s[j] = expf(s[j] - m);
            l += s[j];
        }
        l = warp_sum(l);
        if (lane == 0) {
            stats[h] = m;
            stats[kMaxHeads + h] = l;
        }
    }
    __syncthreads();

    // Weighted sum of V.
    float acc[kMaxHeads][8] = {};
    constexpr unsigned v_flight = kInFlight<VC, tailed>;
    for (unsigned t0 = begin + warp * rows_per_warp * v_flight; t0 < end; t0 += kWarps * rows_per_warp * v_flight) {
        LoadedChunk c[v_flight] = {};
#pragma unroll
        for (unsigned u = 0; u < v_flight; ++u) {
            const unsigned t = t0 + u * rows_per_warp + row_in_warp;
            if (t < end && has_chunk)
                load_row<VC, tailed>(p, p.v, v_tail, seq, kv_head, t, chunk, c[u]);
        }
#pragma unroll
        for (unsigned u = 0; u < v_flight; ++u) {
            const unsigned t = t0 + u * rows_per_warp + row_in_warp;
            if (t >= end || !has_chunk)
                continue;
            float x[8];
            decode_row<VC, tailed>(c[u], chunk, d, x);
#pragma unroll
            for (unsigned h = 0; h < kMaxHeads; ++h) {
                if (h >= heads)
                    break;
                const float w = scores[h * p.split + (t - begin)];
#pragma unroll
                for (unsigned i = 0; i < 8; ++i)
                    acc[h][i] += w * x[i];
            }
        }
    }
    // Sum over the rows a warp held side by side (lanes with the same chunk)...
#pragma unroll
    for (unsigned h = 0; h < kMaxHeads; ++h) {
        if (h >= heads)
            break;
        for (unsigned o = p.lanes_per_row; o < kWarp; o *= 2)
#pragma unroll
            for (unsigned i = 0; i < 8; ++i)
                acc[h][i] += __shfl_xor_sync(kFull, acc[h][i], o);
    }
    // ...then over the warps, in warp order so that results are reproducible.
    for (unsigned w = 0; w < kWarps; ++w) {
        if (warp == w && row_in_warp == 0 && has_chunk) {
#pragma unroll
            for (unsigned h = 0; h < kMaxHeads; ++h) {
                if (h >= heads)
                    break;
#pragma unroll
                for (unsigned i = 0; i < 8; ++i)
                    out_s[h * d + chunk * 8 + i] += acc[h][i];
            }
        }
        __syncthreads();
    }

    for (unsigned idx = threadIdx.x; idx < heads * d; idx += kThreads) {
        const unsigned h = idx / d, i = idx % d;
        const std::size_t row = std::size_t{query} * p.n_heads + first_head + h;
        if (splits == 1) {
            p.out[row * d + i] = out_s[idx] / stats[kMaxHeads + h];
        } else {
            const std::size_t part = row * p.max_splits + blockIdx.z;
            p.partial_acc[part * d + i] = out_s[idx];
            if (i == 0) {
                p.partial_max[part] = stats[h];
                p.partial_sum[part] = stats[kMaxHeads + h];
            }
        }
    }
}

// Merges a (query, head)'s splits: with M = max_s m_s and w_s = exp(m_s - M),
//   out = sum_s w_s acc_s / sum_s w_s l_s,
// the softmax over the whole context.
__global__ void __launch_bounds__(kThreads) merge_splits_kernel(const Params p) {
    const unsigned query = blockIdx.x, head = blockIdx.y;
    const unsigned splits = (p.position[query] + 1 + p.split - 1) / p.split;
    if (splits == 1)
        return; // written directly by the split kernel
    const std::size_t row = std::size_t{query} * p.n_heads + head;
    const std::size_t first = row * p.max_splits;
    float m = -INFINITY;
    for (unsigned s = 0; s < splits; ++s)
        m = fmaxf(m, p.partial_max[first + s]);
    float l = 0.0f;
    for (unsigned s = 0; s < splits; ++s)
        l += expf(p.partial_max[first + s] - m) * p.partial_sum[first + s];
    for (unsigned i = threadIdx.x; i < p.head_dim; i += kThreads) {
        float sum = 0.0f;
        for (unsigned s = 0; s < splits; ++s)
            sum += expf(p.partial_max[first + s] - m) * p.partial_acc[(first + s) * p.head_dim + i];
        p.out[row * p.head_dim + i] = sum / l;
    }
}

void fail(const std::string& what) { throw std::invalid_argument("cuda::paged_attention: " + what); }

unsigned lanes_per_row(unsigned head_dim) {
    unsigned lanes = 1;
    while (lanes * 8 < head_dim)
        lanes *= 2;
    return lanes;
}

int multiprocessors() {
    int device = 0, count = 0;
    KVSCOPE_CUDA_CHECK(cudaGetDevice(&device));
    KVSCOPE_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
}

// Positions per thread block: enough blocks to give every multiprocessor
// about 8, but no fewer than kMinSplit positions (below that the fixed
// cost of a block dominates) and no more than kMaxSplit (shared memory).
unsigned choose_split(const cpu::PagedKv& kv, const AttentionBatch& batch) {
    const unsigned group = batch.n_heads / kv.n_kv_heads;
    const std::size_t items = std::size_t{batch.n_queries} * kv.n_kv_heads * ((group + kMaxHeads - 1) / kMaxHeads);
    const std::size_t wanted_blocks = 8 * static_cast<std::size_t>(multiprocessors());
    const std::size_t splits = std::max<std::size_t>(1, (wanted_blocks + items - 1) / items);
    const std::size_t split = (batch.max_context + splits - 1) / splits;
    return static_cast<unsigned>(std::clamp<std::size_t>((split + kMinSplit - 1) / kMinSplit * kMinSplit, kMinSplit,
                                                         kMaxSplit));
}

void check(const cpu::PagedKv& kv, const AttentionBatch& batch) {
    cpu::check_paged_kv(kv);
    if (kv.head_dim % 8 != 0 || kv.head_dim > 256)
        fail("head_dim " + std::to_string(kv.head_dim) + " must be a multiple of 8 and at most 256");
    if (batch.n_heads == 0 || batch.n_heads % kv.n_kv_heads != 0)
        fail(std::to_string(batch.n_heads) + " query heads are not a multiple of " + std::to_string(kv.n_kv_heads) +
             " KV heads");
    if (batch.n_queries > 0 && (batch.q == nullptr || batch.out == nullptr || batch.seq == nullptr ||
                                batch.position == nullptr))
        fail("null query, output, sequence or position array");
    if (batch.n_queries > 0 && batch.max_context == 0)
        fail("max_context is 0");
    if (batch.table_stride == 0 && batch.n_queries > 0)
        fail("table_stride is 0");
    if (cpu::kv_elem_seals_blocks(kv.elem) && batch.n_queries > 0 &&
        (batch.tails == nullptr || batch.seq_context == nullptr))
        fail("a KIVI pool needs each sequence's tail and context length");
}

// Every row address is a multiple of the chunk's load width (16 bytes at
// most) when the pool and all offsets and strides are.
bool rows_aligned(const cpu::PagedKv& kv, detail::RowCodes codes) {
    const std::size_t width = std::min(16u, std::max(detail::chunk_bytes(codes.k), detail::chunk_bytes(codes.v)));
    const std::size_t numbers[] = {reinterpret_cast<std::uintptr_t>(kv.pool), kv.bytes_per_block, kv.k_offset,
                                   kv.v_offset, kv.head_stride, kv.slot_stride};
    return std::all_of(std::begin(numbers), std::end(numbers), [&](std::size_t n) { return n % width == 0; });
}

std::size_t workspace_floats(const cpu::PagedKv& kv, const AttentionBatch& batch, unsigned split) {
    const std::size_t max_splits = (batch.max_context + split - 1) / split;
    if (max_splits <= 1)
        return 0;
    return std::size_t{batch.n_queries} * batch.n_heads * max_splits * (kv.head_dim + 2);
}

template <Code KC, Code VC = KC>
void launch(const Params& p, dim3 grid, std::size_t shared_bytes, cudaStream_t stream) {
    attention_split_kernel<KC, VC><<<grid, kThreads, shared_bytes, stream>>>(p);
}

} // namespace

std::size_t attention_workspace_bytes(const cpu::PagedKv& kv, const AttentionBatch& batch) {
    check(kv, batch);
    if (batch.n_queries == 0)
        return 0;
    return workspace_floats(kv, batch, choose_split(kv, batch)) * sizeof(float);
}

void paged_attention(const cpu::PagedKv& kv, const AttentionBatch& batch, void* workspace,
                     std::size_t workspace_bytes, Stream stream) {
    check(kv, batch);
    if (batch.n_queries == 0)
        return;
    const detail::RowCodes codes = detail::row_codes(kv.elem);
    const unsigned split = choose_split(kv, batch);
    const std::size_t needed = workspace_floats(kv, batch, split) * sizeof(float);
    if (workspace_bytes < needed || (needed > 0 && workspace == nullptr))
        fail("workspace of " + std::to_string(workspace_bytes) + " bytes, needs " + std::to_string(needed));

    Params p{};
    p.pool = reinterpret_cast<const unsigned char*>(kv.pool);
    p.bytes_per_block = kv.bytes_per_block;
    p.head_stride = kv.head_stride;
    p.slot_stride = kv.slot_stride;
    const bool fp8 = kv.elem == cpu::KvElem::Fp8E4M3;
    p.k = {kv.k_offset, kv.k_scale.offset, kv.k_scale.head_stride, kv.k_scale.slot_stride,
           fp8 ? kv.fixed_scales : nullptr, kv.tail.k_offset};
    p.v = {kv.v_offset, kv.v_scale.offset, kv.v_scale.head_stride, kv.v_scale.slot_stride,
           fp8 ? kv.fixed_scales + kv.n_kv_heads : nullptr, kv.tail.v_offset};
    p.block_size = kv.block_size;
    p.head_dim = kv.head_dim;
    p.n_heads = batch.n_heads;
    p.group = batch.n_heads / kv.n_kv_heads;
    p.lanes_per_row = lanes_per_row(kv.head_dim);
    p.cta_heads = std::min(p.group, kMaxHeads);
    p.aligned = rows_aligned(kv, codes);
    p.scale = 1.0f / std::sqrt(static_cast<float>(kv.head_dim));
    p.q = batch.q;
    p.out = batch.out;
    p.seq = batch.seq;
    p.position = batch.position;
    p.block_tables = batch.block_tables;
    p.table_stride = batch.table_stride;
    p.split = split;
    p.max_splits = (batch.max_context + split - 1) / split;
    p.tails = batch.tails;
    p.seq_context = batch.seq_context;
    p.tail_head_stride = kv.tail.head_stride;
    p.tail_slot_stride = kv.tail.slot_stride;
    if (needed > 0) {
        const std::size_t parts = std::size_t{batch.n_queries} * batch.n_heads * p.max_splits;
        p.partial_acc = static_cast<float*>(workspace);
        p.partial_max = p.partial_acc + parts * kv.head_dim;
        p.partial_sum = p.partial_max + parts;
    }

    const unsigned subgroups = (p.group + kMaxHeads - 1) / kMaxHeads;
    const std::size_t heads_dim = std::size_t{kv.n_kv_heads} * subgroups;
    if (heads_dim > 65535 || p.max_splits > 65535 || batch.n_heads > 65535)
        fail("too many KV heads or context splits for one launch");
    const dim3 grid(batch.n_queries, static_cast<unsigned>(heads_dim), p.max_splits);
    const std::size_t shared_bytes =
        (std::size_t{p.cta_heads} * (2 * kv.head_dim + split) + 2 * kMaxHeads) * sizeof(float);
    const cudaStream_t s = detail::to_stream(stream);
    switch (codes.k) {
    case Code::F32: launch<Code::F32>(p, grid, shared_bytes, s); break;
    case Code::F16: launch<Code::F16>(p, grid, shared_bytes, s); break;
    case Code::BF16: launch<Code::BF16>(p, grid, shared_bytes, s); break;
    case Code::Fp8: launch<Code::Fp8>(p, grid, shared_bytes, s); break;
    case Code::Int8: launch<Code::Int8>(p, grid, shared_bytes, s); break;
    case Code::Int4: launch<Code::Int4>(p, grid, shared_bytes, s); break;
    case Code::Int4Channels: launch<Code::Int4Channels, Code::Int4>(p, grid, shared_bytes, s); break;
    case Code::Int2Channels: launch<Code::Int2Channels, Code::Int2>(p, grid, shared_bytes, s); break;
    case Code::Int2: break; // only ever a V code
    }
    detail::check_launch("attention_split_kernel");
    if (p.max_splits > 1) {
        merge_splits_kernel<<<dim3(batch.n_queries, batch.n_heads), kThreads, 0, s>>>(p);
        detail::check_launch("merge_splits_kernel");
    }
}

void check_attention_batch(const cpu::PagedKv& kv, const std::vector<std::uint32_t>& seq,
                           const std::vector<std::uint32_t>& position, std::uint32_t max_context,
                           const std::vector<std::uint32_t>& block_tables, std::uint32_t table_stride,
                           std::uint32_t n_seqs) {
    if (seq.size() != position.size())
        fail(std::to_string(seq.size()) + " sequence ids but " + std::to_string(position.size()) + " positions");
    if (!block_tables.empty() && block_tables.size() < std::size_t{n_seqs} * table_stride)
        fail("a block table of " + std::to_string(block_tables.size()) + " entries for " + std::to_string(n_seqs) +
             " sequences of " + std::to_string(table_stride));
    for (std::size_t i = 0; i < seq.size(); ++i) {
        const std::string which = "query " + std::to_string(i);
        if (seq[i] >= n_seqs)
            fail(which + " reads sequence " + std::to_string(seq[i]) + " of " + std::to_string(n_seqs));
        if (position[i] >= max_context)
            fail(which + " is at position " + std::to_string(position[i]) + ", max_context is " +
                 std::to_string(max_context));
        const std::size_t blocks = position[i] / kv.block_size + 1;
        if (blocks > table_stride)
            fail(which + " needs " + std::to_string(blocks) + " blocks, a table row holds " +
                 std::to_string(table_stride));
        for (std::size_t b = 0; b < blocks; ++b) {
            const std::size_t index = std::size_t{seq[i]} * table_stride + b;
            const std::size_t block = block_tables.empty() ? index : block_tables[index];
            if (block >= kv.n_blocks)
                fail(which + " reaches block " + std::to_string(block) + " of a pool of " +
                     std::to_string(kv.n_blocks));
        }
    }
}

} // namespace kvscope::kernels::cuda

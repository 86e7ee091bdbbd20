// engine/bench: llama.cpp's llama-batched-bench experiment through the
// engine (`kvscope-cli bench batch`), so one command on each side compares.
// A row (PP, TG, B): B sequences, each with its own PP-token prompt, are
// prefilled together; then all B decode TG tokens together, EOS ignored.
// T_PP is the time of the steps until every sequence has its first token,
// T_TG the time of the TG decode steps after them: llama-batched-bench's
// default (non-shared prompt) meaning, its columns derived the same way.
// Times are steady_clock around Engine::step() calls; the engine also
// samples (greedy) each step's tokens, which llama-batched-bench does not.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"

namespace kvscope {

struct BatchedBenchShape {
    std::uint32_t pp = 0;    // prompt tokens per sequence
    std::uint32_t tg = 0;    // decode steps, one token per sequence each
    std::uint32_t batch = 0; // B, sequences
};

struct BatchedBenchRow {
    BatchedBenchShape shape;
    double t_pp = 0; // seconds
    double t_tg = 0; // seconds
    // Steps T_PP spans: 1 when the pool and the token budget take every
    // prompt at once; more when --max-batched-tokens chunks them, and then
    // sequences whose prompt is done already decode inside T_PP.
    std::uint32_t prompt_steps = 0;

    std::uint64_t n_kv() const { return std::uint64_t{shape.batch} * (shape.pp + shape.tg); }
    double s_pp() const { return static_cast<double>(shape.batch) * shape.pp / t_pp; }
    double s_tg() const { return static_cast<double>(shape.batch) * shape.tg / t_tg; }
    double t() const { return t_pp + t_tg; }
    double s() const { return static_cast<double>(n_kv()) / t(); }
    double decode_step_ms() const { return 1000 * t_tg / shape.tg; }
};

// llama-batched-bench's rows: every (pp, tg, batch), batch varying fastest.
std::vector<BatchedBenchShape> batched_bench_shapes(const std::vector<std::uint32_t>& pp,
                                                    const std::vector<std::uint32_t>& tg,
                                                    const std::vector<std::uint32_t>& batch);

// `config` for running `shapes` on `model` with nothing preempted: prefix
// caching off (each prompt is computed), no watermark, max_num_seqs the
// largest B, a KV pool (unless config.kv_budget_mib > 0 chooses one) of
// exactly the blocks the largest row needs, and, when
// config.max_num_batched_tokens is 0, a token budget of the largest B * PP
// so every row's prompts are prefilled in one step. Throws kvscope::Error,
// saying what to lower, when a sequence (PP + TG + 1: the engine counts
// the token the last step samples) exceeds the model's context or a row
// needs more blocks than the chosen budget holds.
EngineConfig batched_bench_config(EngineConfig config, const std::vector<BatchedBenchShape>& shapes,
                                  const Model& model);

// Runs one row on an idle engine and times it. Throws kvscope::Error when a
// request fails or a sequence was preempted (the pool was too small: the
// times would include swapping).
BatchedBenchRow run_batched_bench_row(Engine& engine, const BatchedBenchShape& shape);

} // namespace kvscope

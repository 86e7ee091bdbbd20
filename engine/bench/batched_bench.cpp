#include "engine/bench/batched_bench.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "engine/core/error.h"

namespace kvscope {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// B different pseudo-random prompts (ids 3.., past the usual special
// tokens): different, so that no sequence's K/V could stand in for another's.
std::vector<std::vector<TokenId>> bench_prompts(const Model& model, const BatchedBenchShape& s) {
    std::mt19937 rng(1234);
    const auto top = static_cast<TokenId>(std::max<std::uint32_t>(model.config().vocab_size, 4) - 1);
    std::uniform_int_distribution<TokenId> id(3, top);
    std::vector<std::vector<TokenId>> prompts(s.batch, std::vector<TokenId>(s.pp));
    for (auto& prompt : prompts)
        std::generate(prompt.begin(), prompt.end(), [&] { return id(rng); });
    return prompts;
}

std::string row_name(const BatchedBenchShape& s) {
    return "PP " + std::to_string(s.pp) + ", TG " + std::to_string(s.tg) + ", B " + std::to_string(s.batch);
}

} // namespace

std::vector<BatchedBenchShape> batched_bench_shapes(const std::vector<std::uint32_t>& pp,
                                                    const std::vector<std::uint32_t>& tg,
                                                    const std::vector<std::uint32_t>& batch) {
    std::vector<BatchedBenchShape> shapes;
    for (std::uint32_t p : pp)
        for (std::uint32_t t : tg)
            for (std::uint32_t b : batch)
                shapes.push_back({p, t, b});
    return shapes;
}

EngineConfig batched_bench_config(EngineConfig config, const std::vector<BatchedBenchShape>& shapes,
                                  const Model& model) {
    if (shapes.empty())
        throw Error("bench batch needs at least one (PP, TG, B) row");
    const std::uint32_t context = model.config().context_length;
    std::uint32_t most_seqs = 0, most_prompt_tokens = 0;
    std::size_t most_blocks = 0;
    const BatchedBenchShape* largest = &shapes.front();
    const KvLayout layout = engine_kv_layout(config, model.config());
    for (const BatchedBenchShape& s : shapes) {
        if (context > 0 && s.pp + s.tg + 1 > context)
            throw Error(row_name(s) + ": PP + TG = " + std::to_string(s.pp + s.tg) +
                        " tokens per sequence, plus the one the last step samples, exceed the model's context of " +
                        std::to_string(context) + " tokens: lower -npp or -ntg");
        most_seqs = std::max(most_seqs, s.batch);
        most_prompt_tokens = std::max(most_prompt_tokens, s.batch * s.pp);
        // The engine admits a request only with room for its prompt and
        // every token it may sample (TG + 1), though the last is never
        // written: size the pool as it counts (window groups capped by a
        // chunk of at most the row's whole prefill).
        const std::size_t blocks = s.batch * layout.sequence_blocks(s.pp + s.tg + 1, std::size_t{s.batch} * s.pp);
        if (blocks > most_blocks) {
            most_blocks = blocks;
            largest = &s;
        }
    }
    config.prefix_caching = false;
    config.watermark = 0;
    config.max_num_seqs = most_seqs;
    if (config.max_num_batched_tokens == 0)
        config.max_num_batched_tokens = most_prompt_tokens;
    if (config.num_blocks == 0 && config.kv_budget_mib == 0)
        config.num_blocks = static_cast<std::uint32_t>(most_blocks);
    const std::uint32_t pool = kv_pool_blocks(config, layout, context);
    if (pool < most_blocks)
        throw Error(row_name(*largest) + " needs " + std::to_string(most_blocks) + " KV blocks of " +
                    std::to_string(config.block_size) + " tokens (N_KV = " +
                    std::to_string(std::uint64_t{largest->batch} * (largest->pp + largest->tg)) +
                    "), the KV pool holds " + std::to_string(pool) +
                    ": lower -npl, -npp or -ntg, or raise --kv-budget-mib (or leave it out: the pool then fits)");
    return config;
}

BatchedBenchRow run_batched_bench_row(Engine& engine, const BatchedBenchShape& shape) {
    if (engine.has_work())
        throw Error("bench batch needs an idle engine: it has requests in flight");
    RequestParams params;
    params.max_new_tokens = shape.tg + 1; // the prompt step samples the first; then TG decode steps
    params.ignore_eos = true;
    std::set<RequestId> started; // those with their first token
    std::optional<std::string> error;
    engine.set_output_callback([&](const RequestOutput& out) {
        if (!out.tokens.empty())
            started.insert(out.request);
        if (out.finish == FinishReason::Error && !error)
            error = out.error;
    });
    std::vector<RequestId> ids;
    for (std::vector<TokenId>& prompt : bench_prompts(engine.model(), shape)) {
        const Admission admitted = engine.add_request(std::move(prompt), params);
        if (!admitted.accepted()) {
            error = admitted.refusal()->message;
            break;
        }
        ids.push_back(admitted.id());
    }
    const std::uint64_t preemptions = engine.scheduler().preemptions();

    BatchedBenchRow row{shape};
    const Clock::time_point start = Clock::now();
    while (started.size() < shape.batch && engine.has_work() && !error) {
        engine.step();
        ++row.prompt_steps;
    }
    const Clock::time_point prompts_done = Clock::now();
    while (engine.has_work() && !error)
        engine.step();
    const Clock::time_point end = Clock::now();
    for (RequestId id : ids)
        engine.abort(id); // after an error, the others; a no-op for finished ones
    engine.set_output_callback({});

    if (error)
        throw Error(row_name(shape) + ": " + *error);
    if (engine.scheduler().preemptions() != preemptions)
        throw Error(row_name(shape) + ": sequences were preempted, so the times include swapping: lower -npl, "
                    "-npp or -ntg, or raise --kv-budget-mib");
    row.t_pp = seconds_between(start, prompts_done);
    row.t_tg = seconds_between(prompts_done, end);
    return row;
}

} // namespace kvscope

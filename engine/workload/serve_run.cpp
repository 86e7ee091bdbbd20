#include "engine/workload/serve_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "engine/workload/workload_feeder.h"

namespace kvscope {
namespace {

// Time-weighted means of the engine's figures, read after each step
// (cheaply: a full snapshot per step would cost more than small steps).
struct Averages {
    double weight = 0, running = 0, occupancy = 0, internal = 0, reserved = 0, external = 0;

    void add(const Engine& e, double dt) {
        const FragmentationStats f = e.kv().fragmentation();
        weight += dt;
        running += dt * static_cast<double>(e.scheduler().num_running());
        occupancy += dt * f.token_occupancy();
        internal += dt * f.internal_waste();
        reserved += dt * f.reserved_waste();
        external += dt * f.external_fragmentation();
    }
    double mean(double sum) const { return weight > 0 ? sum / weight : 0; }
};

void add_step_time(ServeRunResult& r, const StepBatch& batch, double seconds) {
    if (batch.decodes == 0 && batch.prefill_tokens == 0)
        return; // nothing ran (everyone waiting on the pool)
    StepTime* t = &r.prefill_steps;
    if (batch.prefill_tokens == 0) {
        if (r.decode_steps.size() <= batch.decodes)
            r.decode_steps.resize(batch.decodes + 1);
        t = &r.decode_steps[batch.decodes];
    }
    ++t->steps;
    t->seconds += seconds;
}

// FNV-1a over (request, sample, tokens) in request order.
std::uint64_t digest(const std::map<std::pair<RequestId, std::uint32_t>, std::vector<TokenId>>& outputs) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](std::uint64_t v) {
        for (int i = 0; i < 8; ++i, v >>= 8)
            h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    };
    for (const auto& [key, tokens] : outputs) {
        mix(key.first);
        mix(key.second);
        for (TokenId t : tokens)
            mix(static_cast<std::uint32_t>(t));
    }
    return h;
}

} // namespace

ServeRunResult run_workload(const EngineConfig& config, std::shared_ptr<const Model> model,
                            const std::vector<WorkloadRequest>& workload, std::uint32_t n) {
    Engine engine(config, std::move(model));
    ServeRunResult r;
    r.config = config;
    r.requests = static_cast<std::uint32_t>(workload.size());
    r.kv_blocks = engine.kv().config().num_blocks;
    WorkloadFeeder feeder(engine, workload, n);
    std::map<std::pair<RequestId, std::uint32_t>, std::vector<TokenId>> outputs;
    engine.set_output_callback([&](const RequestOutput& o) {
        auto& tokens = outputs[{o.request, o.index}];
        tokens.insert(tokens.end(), o.tokens.begin(), o.tokens.end());
        feeder.on_output(o);
    });
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    Averages avg;
    while (!feeder.all_submitted() || engine.has_work()) {
        feeder.admit_arrivals(); // refusals are counted as failed
        const double before = elapsed();
        engine.step();
        const double dt = elapsed() - before;
        avg.add(engine, dt);
        add_step_time(r, engine.last_batch(), dt);
        r.peak_running = std::max(r.peak_running, engine.scheduler().num_running());
    }
    r.seconds = elapsed();
    r.completed = static_cast<std::uint32_t>(feeder.completed());
    r.failed = static_cast<std::uint32_t>(feeder.failed());
    const auto last = engine.snapshot();
    r.prompt_tokens = last->prompt_tokens;
    r.generated_tokens = last->generated_tokens;
    r.preemptions = last->preemptions;
    r.prefix_hit_tokens = last->prefix_hit_tokens;
    r.ttft = last->ttft;
    r.mean_running = avg.mean(avg.running);
    r.token_occupancy = avg.mean(avg.occupancy);
    r.internal_waste = avg.mean(avg.internal);
    r.reserved_waste = avg.mean(avg.reserved);
    r.external_fragmentation = avg.mean(avg.external);
    r.outputs_digest = digest(outputs);
    return r;
}

} // namespace kvscope

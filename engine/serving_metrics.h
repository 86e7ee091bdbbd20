#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/engine_snapshot.h"

namespace kvscope {

// Throughput from the engine's steps and latency percentiles, from the
// events an Engine reports. Times are seconds since the engine started.
//
// Rates are tokens over the time the steps that made them took: the steps
// that ended within `window_s` of the last one, and always the last one, so
// a step longer than the window still counts (a 10 s step that decoded 47
// sequences reads 4.7 tok/s). Idle time between steps is in no rate; busy_s()
// says how much of the engine's time went into steps.
class ServingMetrics {
public:
    explicit ServingMetrics(double window_s = 5.0) : window_s_(window_s) {}

    // One Engine::step(), from `start` to `end`, and the tokens it computed.
    void on_step(double start, double end, std::uint64_t prompt_tokens, std::uint64_t generated_tokens);
    void on_first_token(double latency_s) { ttft_.push_back(latency_s); }
    void on_next_token(double gap_s) { itl_.push_back(gap_s); }

    double prompt_tokens_per_s() const;
    double generation_tokens_per_s() const;
    double busy_s() const { return busy_total_; }
    double last_step_s() const { return last_step_s_; }
    Percentiles ttft() const { return percentiles_of_seconds(ttft_); }
    Percentiles itl() const { return percentiles_of_seconds(itl_); }
    std::uint64_t prompt_tokens() const { return prompt_total_; }
    std::uint64_t generated_tokens() const { return generated_total_; }

private:
    // A step in the window: when it ended and the totals before it, so the
    // window's sums are differences of totals (no drift, O(1) per step).
    struct Step {
        double end;
        double busy_before;
        std::uint64_t prompt_before;
        std::uint64_t generated_before;
    };
    double rate(std::uint64_t total, std::uint64_t Step::*before) const;

    double window_s_;
    std::deque<Step> window_;
    std::vector<double> ttft_, itl_;
    std::uint64_t prompt_total_ = 0, generated_total_ = 0;
    double busy_total_ = 0, last_step_s_ = 0;
};

} // namespace kvscope

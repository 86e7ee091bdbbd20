#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/engine_snapshot.h"

namespace kvscope {

// Throughput over a sliding window and latency percentiles, from the events
// an Engine reports. Times are seconds since the engine started.
class ServingMetrics {
public:
    explicit ServingMetrics(double window_s = 5.0) : window_s_(window_s) {}

    void on_step(double now, std::uint64_t prompt_tokens, std::uint64_t generated_tokens);
    void on_first_token(double latency_s) { ttft_.push_back(latency_s); }
    void on_next_token(double gap_s) { itl_.push_back(gap_s); }

    double prompt_tokens_per_s(double now) const;
    double generation_tokens_per_s(double now) const;
    Percentiles ttft() const { return percentiles(ttft_); }
    Percentiles itl() const { return percentiles(itl_); }
    std::uint64_t prompt_tokens() const { return prompt_total_; }
    std::uint64_t generated_tokens() const { return generated_total_; }

private:
    struct Sample {
        double time;
        std::uint64_t prompt;
        std::uint64_t generated;
    };
    double rate(double now, std::uint64_t Sample::*field) const;
    static Percentiles percentiles(std::vector<double> values);

    double window_s_;
    std::deque<Sample> window_;
    std::vector<double> ttft_, itl_;
    std::uint64_t prompt_total_ = 0, generated_total_ = 0;
};

} // namespace kvscope

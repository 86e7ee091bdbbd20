#include "engine/serving_metrics.h"

#include <algorithm>
#include <cmath>

namespace kvscope {

void ServingMetrics::on_step(double start, double end, std::uint64_t prompt_tokens,
                             std::uint64_t generated_tokens) {
    window_.push_back({end, busy_total_, prompt_total_, generated_total_});
    last_step_s_ = std::max(end - start, 0.0);
    busy_total_ += last_step_s_;
    prompt_total_ += prompt_tokens;
    generated_total_ += generated_tokens;
    while (window_.front().end < end - window_s_)
        window_.pop_front(); // never the step just pushed
}

double ServingMetrics::rate(std::uint64_t total, std::uint64_t Step::*before) const {
    if (window_.empty())
        return 0;
    const Step& first = window_.front();
    const double busy = busy_total_ - first.busy_before;
    return busy > 0 ? static_cast<double>(total - first.*before) / busy : 0;
}

double ServingMetrics::prompt_tokens_per_s() const { return rate(prompt_total_, &Step::prompt_before); }
double ServingMetrics::generation_tokens_per_s() const { return rate(generated_total_, &Step::generated_before); }

} // namespace kvscope

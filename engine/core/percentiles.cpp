#include "engine/core/percentiles.h"

#include <algorithm>
#include <cmath>

namespace kvscope {

namespace {

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
    if (sorted.empty())
        return 0;
    const double rank = std::clamp(p, 0.0, 100.0) / 100 * static_cast<double>(sorted.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(rank));
    const std::size_t above = std::min(below + 1, sorted.size() - 1);
    return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

} // namespace

double percentile(std::vector<double> values, double p) {
    std::sort(values.begin(), values.end());
    return percentile_of_sorted(values, p);
}

Percentiles percentiles_ms(std::vector<double> milliseconds) {
    std::sort(milliseconds.begin(), milliseconds.end());
    return {percentile_of_sorted(milliseconds, 50), percentile_of_sorted(milliseconds, 90),
            percentile_of_sorted(milliseconds, 95), percentile_of_sorted(milliseconds, 99)};
}

Percentiles percentiles_of_seconds(const std::vector<double>& seconds) {
    std::vector<double> ms(seconds.size());
    std::transform(seconds.begin(), seconds.end(), ms.begin(), [](double s) { return 1000 * s; });
    return percentiles_ms(std::move(ms));
}

} // namespace kvscope

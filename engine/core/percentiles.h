// Percentiles of a sample: the one definition kvscope reports anywhere
// (engine snapshots, bench client, bench serve, the app's latency probe,
// --bench-paint).
//
// Linear interpolation between the two closest ranks: for n sorted values
// the p-th percentile sits at rank h = p/100 * (n - 1), between values[floor h]
// and values[floor h + 1] (Hyndman & Fan's type 7, numpy.percentile's
// default). vLLM's benchmark_serving.py reports its TTFT/ITL percentiles
// with numpy, so kvscope's read the same on the same samples; and unlike
// nearest rank it moves smoothly as samples arrive in a small window.
// Prometheus histograms are another thing (binned counts, not samples):
// net/attach estimates their quantiles as histogram_quantile does.
#pragma once

#include <vector>

namespace kvscope {

// The p-th percentile (p in [0, 100]) of `values`, in their unit; 0 for
// none. Takes a copy to sort.
double percentile(std::vector<double> values, double p);

// The latency percentiles kvscope shows, in milliseconds; 0 until the first sample.
struct Percentiles {
    double p50_ms = 0;
    double p90_ms = 0;
    double p95_ms = 0;
    double p99_ms = 0;

    bool operator==(const Percentiles&) const = default;
};

Percentiles percentiles_ms(std::vector<double> milliseconds);
Percentiles percentiles_of_seconds(const std::vector<double>& seconds);

} // namespace kvscope

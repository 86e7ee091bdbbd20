#include "engine/workload/workload_feeder.h"

#include <algorithm>
#include <utility>

namespace kvscope {

RequestParams request_params(const WorkloadRequest& w, std::uint32_t n) {
    RequestParams p;
    p.max_new_tokens = w.max_new_tokens;
    p.end_after_tokens = w.output_len;
    p.n = n;
    p.ignore_eos = true; // random weights: the drawn length decides, not the model
    return p;
}

WorkloadFeeder::WorkloadFeeder(Engine& engine, std::vector<WorkloadRequest> requests, std::uint32_t n,
                               std::int32_t priority)
    : engine_(engine), requests_(std::move(requests)), n_(std::max<std::uint32_t>(n, 1)), priority_(priority) {}

double WorkloadFeeder::elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

std::vector<WorkloadRejection> WorkloadFeeder::admit_arrivals() {
    std::vector<WorkloadRejection> rejections;
    for (; !all_submitted() && requests_[next_].arrival_s <= elapsed_s(); ++next_) {
        const WorkloadRequest& r = requests_[next_];
        RequestParams params = request_params(r, n_);
        params.priority = priority_;
        const Admission admitted = engine_.add_request(r.prompt, params);
        if (admitted.accepted()) {
            open_.insert(admitted.id());
        } else {
            ++failed_;
            rejections.push_back({next_, admitted.refusal()->message});
        }
    }
    return rejections;
}

bool WorkloadFeeder::on_output(const RequestOutput& out) {
    if (!open_.contains(out.request))
        return false;
    // A request ends with its first sample, as serving benchmarks count it.
    if (out.finish && out.index == 0) {
        open_.erase(out.request);
        count_end(*out.finish);
    }
    return true;
}

void WorkloadFeeder::count_end(FinishReason reason) {
    switch (reason) {
    case FinishReason::Stop:
    case FinishReason::Length: ++completed_; break;
    case FinishReason::Error: ++failed_; break;
    case FinishReason::Abort: ++aborted_; break;
    }
}

std::size_t WorkloadFeeder::stop() {
    stopped_ = true;
    const std::vector<RequestId> open(open_.begin(), open_.end());
    for (RequestId id : open)
        engine_.abort(id); // on_output counts each end
    return open.size();
}

std::optional<double> WorkloadFeeder::seconds_to_next_arrival() const {
    if (all_submitted())
        return std::nullopt;
    return std::max(0.0, requests_[next_].arrival_s - elapsed_s());
}

} // namespace kvscope

// engine/workload: synthetic serving workloads — request lengths drawn from a
// distribution, arrival times (this file, depends on engine/kv's token ids
// only) — and running them: workload_feeder.h paces one into an Engine for
// `bench serve`, the app's load generator and the server's load tests;
// serve_run.h is `bench serve`'s measured run on a fresh Engine.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/kv/kv_ids.h"

namespace kvscope {

enum class LengthDistribution : std::uint8_t {
    Fixed,    // every request: prompt_len prompt tokens, output_len new tokens
    Uniform,  // each uniform in [min_len, prompt_len] and [min_len, output_len]
    ShareGpt, // log-normal, long-tailed like ShareGPT conversations (see workload.cpp)
};
std::string_view to_string(LengthDistribution d);
LengthDistribution parse_length_distribution(std::string_view word);

struct WorkloadSpec {
    std::uint32_t requests = 48;
    LengthDistribution distribution = LengthDistribution::ShareGpt;
    std::uint32_t prompt_len = 128; // Fixed: the length; Uniform: the maximum
    std::uint32_t output_len = 128;
    std::uint32_t min_len = 4;
    std::uint32_t max_total = 512;  // prompt + output never exceed it
    double arrival_rate = 0;        // requests per second, Poisson; 0: all at once
    std::uint32_t shared_prefix = 0; // tokens of a common "system prompt" before each prompt
    std::uint32_t n = 1;            // samples per request
    std::uint32_t vocab = 32000;    // prompt ids are drawn from [3, vocab)
    std::uint64_t seed = 1;
    // What a request asks for as max_new_tokens. false: the cap every
    // client sends, max_total - prompt, since no client knows how long the
    // reply will be; the reply then ends at its drawn length, as if the
    // model sampled EOS there. true: exactly the drawn length (the
    // PagedAttention paper's "Oracle" baseline, which a contiguous
    // allocator can only dream of: it reserves no slot it will not use).
    bool oracle_lengths = false;
};

struct WorkloadRequest {
    double arrival_s = 0;
    std::vector<TokenId> prompt;      // BOS (1), shared prefix, then random ids
    std::uint32_t max_new_tokens = 0; // what the request asks for (see oracle_lengths)
    std::uint32_t output_len = 0;     // where its reply ends (<= max_new_tokens)
};

// Deterministic for a given spec (seed included).
std::vector<WorkloadRequest> make_workload(const WorkloadSpec& spec);

} // namespace kvscope

// The engine's request API under random scripts: add_request (random token
// prompts, some out of the vocabulary or empty; n, max_new_tokens and
// sampling parameters, some invalid), abort (of live, finished and unknown
// requests) and step, on a tiny random-weight model with a small KV pool so
// that preemption (swap or recompute) and prefix caching happen. Promises
// checked: nothing throws; the engine runs out of work within a bound; and
// once it has, every KV block is free again (cached-free counts as free).
// Public API only (engine.h, engine_config.h).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/core/log.h"
#include "engine/engine.h"
#include "engine/model/synthetic_model.h"
#include "fuzz_support.h"

namespace {

using kvscope::fuzz::require;

// A llama of the smallest useful shape: two layers, GQA (4 query heads on
// 2 KV heads), a vocabulary just above the 259 byte and control tokens.
const kvscope::ModelGeometry kTiny{.name = "fuzz-tiny",
                                   .architecture = "llama",
                                   .dim = 32,
                                   .n_layers = 2,
                                   .n_heads = 4,
                                   .n_kv_heads = 2,
                                   .ffn_dim = 64,
                                   .vocab = 320,
                                   .context = 96};
constexpr int kMaxOps = 64;
constexpr int kMaxDrainSteps = 20000; // far above what kMaxOps requests of <= 96 tokens need

std::shared_ptr<const kvscope::Model> model;

kvscope::EngineConfig config(FuzzedDataProvider& in) {
    kvscope::EngineConfig c;
    c.backend = kvscope::Backend::Cpu;
    c.threads = 1;
    c.kv_dtype = kvscope::KvDtype::F32;
    c.block_size = in.PickValueInArray<std::uint32_t>({1, 4, 16});
    c.num_blocks = in.ConsumeIntegralInRange<std::uint32_t>(4, 48);
    c.preemption = in.ConsumeBool() ? kvscope::PreemptionMode::Swap : kvscope::PreemptionMode::Recompute;
    c.prefix_caching = in.ConsumeBool();
    c.max_num_seqs = in.ConsumeIntegralInRange<std::uint32_t>(1, 8);
    c.max_num_batched_tokens = in.ConsumeIntegralInRange<std::uint32_t>(16, 128);
    c.watermark = 0;
    return c;
}

std::vector<kvscope::TokenId> prompt(FuzzedDataProvider& in) {
    std::vector<kvscope::TokenId> tokens(in.ConsumeIntegralInRange<std::size_t>(0, 48));
    const auto vocab = static_cast<kvscope::TokenId>(kTiny.vocab);
    for (kvscope::TokenId& t : tokens)
        t = in.ConsumeIntegralInRange<kvscope::TokenId>(-1, vocab); // both ends just outside
    return tokens;
}

kvscope::RequestParams params(FuzzedDataProvider& in) {
    kvscope::RequestParams p;
    p.n = in.ConsumeIntegralInRange<std::uint32_t>(0, 4);
    p.max_new_tokens = in.ConsumeIntegralInRange<std::uint32_t>(0, 24);
    p.sampling.temperature = in.ConsumeFloatingPointInRange<float>(-0.5f, 2.0f);
    p.sampling.top_k = in.ConsumeIntegralInRange<std::uint32_t>(0, 400);
    p.sampling.top_p = in.ConsumeFloatingPointInRange<float>(-0.1f, 1.1f);
    p.sampling.min_p = in.ConsumeFloatingPointInRange<float>(-0.1f, 1.1f);
    p.sampling.repetition_penalty = in.ConsumeFloatingPointInRange<float>(0.0f, 2.0f);
    p.sampling.seed = in.ConsumeIntegral<std::uint64_t>();
    p.ignore_eos = in.ConsumeBool();
    return p;
}

// A request is accepted with an id, or refused with a reason and a message
// and nothing else changes.
void add(kvscope::Engine& engine, std::vector<kvscope::TokenId> prompt, const kvscope::RequestParams& params,
         std::vector<kvscope::RequestId>& ids) {
    const bool had_work = engine.has_work();
    const kvscope::Admission a = engine.add_request(std::move(prompt), params);
    if (a.accepted()) {
        ids.push_back(a.id());
        return;
    }
    require(!a.refusal()->message.empty(), "a refusal says why");
    require(engine.has_work() == had_work, "a refused request leaves no work behind");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    kvscope::set_log_level("off");
    const int fd = memfd_create("fuzz-tiny.gguf", 0); // stays open: the model maps it
    require(fd >= 0, "memfd_create works");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    kvscope::write_synthetic_model(kTiny, kvscope::GgmlType::F32, 1, path);
    model = std::make_shared<const kvscope::Model>(path);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    kvscope::Engine engine(config(in), model);
    std::vector<kvscope::RequestId> ids;
    for (int op = 0; op < kMaxOps && in.remaining_bytes() > 0; ++op) {
        switch (in.ConsumeIntegralInRange(0, 3)) {
        case 0: add(engine, prompt(in), params(in), ids); break;
        case 1: engine.abort(ids.empty() ? 0 : in.PickValueInArray<kvscope::RequestId>({ids.back(), ids.front(), 12345})); break;
        default: engine.step(); break;
        }
    }
    for (int i = 0; i < kMaxDrainSteps && engine.has_work(); ++i)
        engine.step();
    require(!engine.has_work(), "every request finishes");
    const auto& pool = engine.kv().pool();
    require(pool.num_free() == pool.num_blocks(), "every KV block is free once no work is left");
    return 0;
}

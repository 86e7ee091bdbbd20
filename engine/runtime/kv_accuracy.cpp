#include "engine/runtime/kv_accuracy.h"

#include <algorithm>
#include <memory>
#include <string>

#include "engine/kv/kv_cache_manager.h"
#include "engine/runtime/forward_pass.h"
#include "engine/runtime/perplexity.h"
#include "engine/runtime/runner.h"

namespace kvscope {
namespace {

constexpr SeqId kSeq = 1;

KvLayout layout_for(const Model& model, KvDtype dtype, std::uint32_t block_size) {
    const ModelConfig& c = model.config();
    return KvLayout(c.kv_geometry(), dtype, block_size);
}

// One sequence teacher-forced through its own paged KV cache in one dtype,
// a position at a time: the decode path, which is where a quantized cache
// is read back for every earlier token.
class ForcedSequence {
public:
    ForcedSequence(const Model& model, const KvLayout& layout, std::size_t max_tokens, Backend requested,
                   int threads)
        : backend_(choose_backend(requested, model.config(), layout)),
          kv_({layout, static_cast<std::uint32_t>(layout.blocks_for_tokens(max_tokens)), AllocationMode::Paged, false,
               0, 0.0, kv_memory(backend_)}),
          runner_(make_forward_pass(backend_, model, kv_.layout(), threads)),
          max_tokens_(static_cast<std::uint32_t>(max_tokens)) {}

    Backend backend() const { return backend_; }

    // Empties the cache for the next window.
    void restart() {
        if (kv_.contains(kSeq))
            kv_.free(kSeq);
    }

    // Writes `token` at the next position and returns the logits that
    // predict the one after it (valid until the next call).
    const std::vector<float>& feed(TokenId token) {
        const std::span<const TokenId> one(&token, 1);
        if (!kv_.contains(kSeq))
            kv_.allocate(kSeq, one, max_tokens_ - 1);
        else
            kv_.append(kSeq, token);
        const SeqChunk chunk{kSeq, one, kv_.num_tokens(kSeq) - 1, true};
        runner_->forward({&chunk, 1}, kv_, logits_);
        return logits_;
    }

private:
    Backend backend_;
    KvCacheManager kv_;
    std::unique_ptr<ForwardPass> runner_;
    std::uint32_t max_tokens_;
    std::vector<float> logits_;
};

std::uint32_t window_length(const Model& model, std::size_t tokens, std::uint32_t requested) {
    const std::size_t model_context = model.config().context_length;
    if (requested > 0 && model_context > 0 && requested > model_context)
        throw Error("a window of " + std::to_string(requested) + " tokens exceeds the model's context of " +
                    std::to_string(model_context) + " tokens");
    if (requested > 0)
        return requested;
    return static_cast<std::uint32_t>(model_context > 0 ? model_context : tokens);
}

// f32 first (the reference), then the requested dtypes without repeats.
std::vector<KvDtype> with_f32_first(std::span<const KvDtype> requested) {
    std::vector<KvDtype> dtypes{KvDtype::F32};
    for (KvDtype d : requested)
        if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end())
            dtypes.push_back(d);
    return dtypes;
}

// One run per dtype, in the order given.
std::vector<std::unique_ptr<ForcedSequence>> forced_runs(const Model& model, std::span<const KvDtype> dtypes,
                                                        std::uint32_t block_size, std::size_t max_tokens,
                                                        Backend backend, int threads) {
    std::vector<std::unique_ptr<ForcedSequence>> runs;
    for (KvDtype d : dtypes)
        runs.push_back(
            std::make_unique<ForcedSequence>(model, layout_for(model, d, block_size), max_tokens, backend, threads));
    return runs;
}

std::vector<NextTokenStats> score(std::span<const std::unique_ptr<ForcedSequence>> runs,
                                  std::span<const std::span<const TokenId>> windows, const KvAccuracyOptions& options) {
    std::vector<NextTokenStats> stats(runs.size());
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const std::span<const TokenId> window = windows[w];
        for (auto& run : runs)
            run->restart();
        for (std::size_t p = 0; p + 1 < window.size(); ++p) {
            if (options.cancel && options.cancel->load())
                throw KvAccuracyCancelled();
            const std::vector<double> reference = log_softmax(runs[0]->feed(window[p]));
            stats[0].add(reference, reference, window[p + 1]);
            for (std::size_t d = 1; d < runs.size(); ++d)
                stats[d].add(reference, log_softmax(runs[d]->feed(window[p])), window[p + 1]);
        }
        if (options.on_window)
            options.on_window(w + 1, windows.size());
    }
    return stats;
}

} // namespace

std::vector<std::span<const TokenId>> evaluation_windows(std::span<const TokenId> tokens, std::uint32_t context) {
    if (tokens.size() < 2)
        throw Error("the text has " + std::to_string(tokens.size()) +
                    " token(s): at least 2 are needed to score a next-token prediction");
    if (context < 2)
        throw Error("the evaluation window must hold at least 2 tokens, got " + std::to_string(context));
    std::vector<std::span<const TokenId>> windows;
    // Each window starts at the previous one's last token: context - 1 new
    // predictions per window.
    for (std::size_t start = 0; start + 1 < tokens.size(); start += context - 1)
        windows.push_back(tokens.subspan(start, std::min<std::size_t>(context, tokens.size() - start)));
    return windows;
}

std::vector<KvDtype> runnable_kv_dtypes(const Model& model, Backend backend) {
    std::vector<KvDtype> dtypes{KvDtype::F32};
    for (KvDtype d : all_kv_dtypes()) {
        if (d == KvDtype::F32)
            continue;
        // The forward passes are the authority on what they can run:
        // choose_backend refuses what CUDA cannot, the CPU runner refuses
        // an unsupported dtype when it is built.
        try {
            const KvLayout layout = layout_for(model, d, 16);
            if (choose_backend(backend, model.config(), layout) == Backend::Cpu)
                const Runner probe(model.config(), model.weights(), layout);
            dtypes.push_back(d);
        } catch (const Error&) {
        }
    }
    return dtypes;
}

KvAccuracyReport measure_kv_accuracy(const Model& model, std::span<const TokenId> tokens,
                                     const KvAccuracyOptions& options) {
    KvAccuracyReport report;
    report.tokens = tokens.size();
    report.context = window_length(model, tokens.size(), options.context);
    const std::vector<std::span<const TokenId>> windows = evaluation_windows(tokens, report.context);
    report.windows = windows.size();
    const std::vector<KvDtype> dtypes = with_f32_first(options.kv_dtypes);
    const std::size_t longest = windows.front().size(); // only the last window can be shorter
    const auto runs = forced_runs(model, dtypes, options.block_size, longest, options.backend, options.threads);
    const std::vector<NextTokenStats> stats = score(runs, windows, options);
    report.scored = stats[0].positions();

    const double f16_bytes = static_cast<double>(layout_for(model, KvDtype::F16, options.block_size).bytes_per_token());
    const double f32_perplexity = stats[0].perplexity();
    for (std::size_t d = 0; d < dtypes.size(); ++d) {
        KvAccuracyRow row;
        row.kv_dtype = dtypes[d];
        row.bytes_per_token = static_cast<double>(layout_for(model, dtypes[d], options.block_size).bytes_per_token());
        row.saving_vs_f16 = f16_bytes / row.bytes_per_token;
        row.perplexity = stats[d].perplexity();
        row.delta_pct = 100.0 * (row.perplexity / f32_perplexity - 1.0);
        row.kld = stats[d].mean_kld();
        row.top1_agreement = stats[d].top1_agreement();
        row.backend = runs[d]->backend();
        report.rows.push_back(row);
    }
    return report;
}

} // namespace kvscope

// kvscope against llama.cpp on the same files: the references that
// tests/data/llamacpp/make_references.sh keeps (llama.cpp's lltop and llgen
// on make-model's random-weight models, F16, Q8_0 and Q4_0), so this test
// needs no llama.cpp. Per model file:
// - it is regenerated with make-model's recorded arguments and must have
//   the recorded SHA-256 (else the writer changed and the references are
//   stale: rerun the script);
// - teacher forcing (engine/runtime/teacher_forcing.h, F16 KV as llama.cpp
//   keeps it; F32 for an F16 mixture of experts, whose router would turn
//   KV rounding into coin flips: reference_kv_dtype) over the 576-token prompt and llgen's 64 greedy tokens after
//   it, which cross every window of the cut models: top-1 agreement with
//   llama.cpp and mean KL divergence (support/llamacpp_references.h's
//   coarse_kl) within the file's MatchBar (the issue's 99% and 1e-3 for
//   F16, llama.cpp's own consistency for quantized weights);
// - 64 greedy tokens through the Engine equal llgen's, alone and as one of
//   8 sequences decoded together, up to the end or to a near-tie: where the
//   two part, llama.cpp's own log-probabilities of both tokens at that
//   position must be within the bar's tie (two engines adding in another
//   order may break a tie either way; llama.cpp's batch scoring and its
//   generation sometimes do too);
// - F16 files: the float64 rows beside llama.cpp's (make_float64_references.sh:
//   the model's exact top 4 at the same positions, from a forward pass in
//   double, tests/runtime/float64_forward.cpp) arbitrate between the two
//   engines: our top-1 is the exact one at >= 99% of positions, and our
//   mean KL to the exact distributions (within the top tokens both rows
//   hold: Nearness) is no larger than llama.cpp's (both measured here,
//   llama.cpp's from its rows). Where llama.cpp itself misses the exact
//   top-1 at more than 1% of positions (gemma2-f16: ggml's f16 rounding of
//   matmul inputs under Gemma 2's large attention scores), MatchBar holds
//   us to llama.cpp at 98% with tolerances widened by its own error, and
//   this check is what shows the difference is llama.cpp's.
//   Measured (top-1, mean KL against float64; kvscope / llama.cpp):
//   llama 1.000, 6.9e-8 / 1.000, 3.8e-7; qwen3 1.000, 1.6e-7 / 1.000,
//   5.2e-7; gemma3 1.000, 4.5e-7 / 1.000, 1.3e-6; gemma2 0.994, 1.9e-5 /
//   0.986, 5.9e-5; phi3 0.997, 2.8e-7 / 0.995, 8.7e-7; smollm3 0.998,
//   8.1e-8 / 1.000, 4.2e-7; qwen3moe 1.000, 1.3e-10 / 0.995, 7.0e-7;
//   gpt-oss 1.000, 1.5e-10 / 0.997, 4.8e-6. The float64 pass is not run here (tens of
//   seconds a file); only its stored rows are read.
// The files checked are KVSCOPE_LLAMACPP_FILES (tests/CMakeLists.txt's list
// of those that meet the bar), or the environment variable of that name, a
// comma-separated list of architecture-type names or architectures (all
// three types), to try one not yet listed.
#include <QtTest>

#include <QCryptographicHash>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>

#include "engine/completion.h"
#include "engine/runtime/teacher_forcing.h"
#include "support/llamacpp_references.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

const QString kDataDir = QStringLiteral(KVSCOPE_TEST_DATA "/llamacpp");
constexpr std::uint32_t kGreedyTokens = 64;

// log(sum(exp(row))) in double.
double log_sum_exp(const float* row, std::size_t n) {
    const double max = *std::max_element(row, row + n);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i)
        sum += std::exp(double(row[i]) - max);
    return max + std::log(sum);
}

// kvscope's teacher-forced outputs on a reference's tokens.
struct Forced {
    std::vector<float> logits; // every position's, `vocab` each
    std::size_t vocab = 0;
    std::vector<double> log_z; // each position's log-sum-exp of its logits
    std::vector<TokenId> top1;

    Forced(std::vector<float> all, std::size_t positions) : logits(std::move(all)), vocab(logits.size() / positions) {
        for (std::size_t p = 0; p < positions; ++p) {
            const float* row = logits.data() + p * vocab;
            log_z.push_back(log_sum_exp(row, vocab));
            top1.push_back(static_cast<TokenId>(std::max_element(row, row + vocab) - row));
        }
    }
    double logit(std::size_t p, TokenId t) const { return double(logits[p * vocab + static_cast<std::size_t>(t)]); }
    double logprob(std::size_t p, TokenId t) const { return logit(p, t) - log_z[p]; }
};

std::vector<TokenId> tokens_of(const std::vector<TopEntry>& row) {
    std::vector<TokenId> tokens;
    for (const TopEntry& e : row)
        tokens.push_back(e.token);
    return tokens;
}

EngineConfig cpu_config() {
    EngineConfig config;
    config.backend = Backend::Cpu;
    return config;
}

// Prompts for the sequences decoded beside the reference's: random ids of
// the models' 2048-token vocabulary, of assorted lengths (short: their
// prefill is most of this test's time), from a fixed seed.
std::vector<std::vector<TokenId>> other_prompts(std::size_t count) {
    std::mt19937 rng(7);
    std::uniform_int_distribution<TokenId> token(3, 2047);
    std::uniform_int_distribution<std::size_t> length(20, 200);
    std::vector<std::vector<TokenId>> prompts(count);
    for (auto& p : prompts) {
        p.resize(length(rng));
        for (TokenId& t : p)
            t = token(rng);
    }
    return prompts;
}

} // namespace

class TestLlamaCppMatch : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void teacher_forced_logits_match_data();
    void teacher_forced_logits_match();
    void greedy_generation_matches_data();
    void greedy_generation_matches();
    void nearer_float64_than_llamacpp_data();
    void nearer_float64_than_llamacpp();

private:
    // One data row per file checked; only the F16 ones where `f16_only`.
    void add_rows(bool f16_only = false);
    // Our greedy tokens equal llama.cpp's, or part from them at a near-tie.
    void check_greedy(const QString& what, const Reference& reference, const std::vector<TokenId>& ours);
    // The row's reference and its model, made once by make-model.
    std::pair<const Reference*, std::shared_ptr<const Model>> model_of(const QString& row);
    // Our teacher-forced outputs on the row's prompt and greedy tokens,
    // computed once (F16 KV, as llama.cpp keeps it).
    const Forced& forced(const QString& row);

    QTemporaryDir dir_;
    std::vector<TokenId> prompt_;
    std::map<QString, Reference> references_;
    std::map<QString, std::shared_ptr<const Model>> models_;
    std::map<QString, Forced> forced_;
};

void TestLlamaCppMatch::initTestCase() {
    QVERIFY(dir_.isValid());
    prompt_ = read_prompt(kDataDir);
    QCOMPARE(prompt_.size(), std::size_t{576});
}

void TestLlamaCppMatch::add_rows(bool f16_only) {
    QTest::addColumn<QString>("file");
    for (const QString& file : model_files(KVSCOPE_LLAMACPP_FILES))
        if (!f16_only || file.endsWith("-f16"))
            QTest::newRow(qPrintable(file)) << file;
}

std::pair<const Reference*, std::shared_ptr<const Model>> TestLlamaCppMatch::model_of(const QString& file) {
    if (!references_.count(file))
        references_[file] = read_reference(kDataDir + "/" + file + ".txt");
    const Reference& r = references_[file];
    if (!models_.count(file))
        models_[file] = std::make_shared<const Model>(make_reference_model(r, file, dir_, KVSCOPE_CLI).toStdString());
    return {&r, models_[file]};
}

void TestLlamaCppMatch::teacher_forced_logits_match_data() { add_rows(); }

const Forced& TestLlamaCppMatch::forced(const QString& file) {
    if (!forced_.count(file)) {
        const auto [reference, model] = model_of(file);
        std::vector<TokenId> tokens = prompt_;
        tokens.insert(tokens.end(), reference->greedy.begin(), reference->greedy.end());
        if (reference->top.size() != tokens.size())
            throw std::runtime_error(file.toStdString() + ": the reference has " +
                                     std::to_string(reference->top.size()) + " rows for " +
                                     std::to_string(tokens.size()) + " tokens");
        forced_.emplace(file, Forced(teacher_forced_logits(*model, tokens, reference_kv_dtype(file, *reference)),
                                     tokens.size()));
    }
    return forced_.at(file);
}

void TestLlamaCppMatch::teacher_forced_logits_match() {
    QFETCH(QString, file);
    const Reference& reference = *model_of(file).first;
    const Forced& ours = forced(file);
    const std::size_t positions = reference.top.size();
    std::size_t agree = 0;
    double kl_sum = 0, kl_max = 0, widest_miss = 0; // our logit margin over llama.cpp's top-1 where we differ
    for (std::size_t p = 0; p < positions; ++p) {
        const std::vector<TopEntry>& theirs = reference.top[p];
        agree += ours.top1[p] == theirs.front().token ? 1 : 0;
        widest_miss = std::max(widest_miss, ours.logit(p, ours.top1[p]) - ours.logit(p, theirs.front().token));
        const double kl = coarse_kl(
            tokens_of(theirs), [&](TokenId t) { return *logprob_in(theirs, t); },
            [&](TokenId t) { return ours.logprob(p, t); });
        kl_sum += kl;
        kl_max = std::max(kl_max, kl);
    }
    const double agreement = double(agree) / double(positions), mean_kl = kl_sum / double(positions);
    qInfo("%s: top-1 agreement %.4f (where not, our top-1 leads theirs by at most %.3f), mean KL %.2e (max %.2e) "
          "over %zu positions",
          qPrintable(file), agreement, widest_miss, mean_kl, kl_max, positions);
    const MatchBar bar = match_bar(file, reference);
    QVERIFY2(agreement >= bar.min_top1, qPrintable(QString("top-1 agreement %1").arg(agreement)));
    QVERIFY2(mean_kl <= bar.max_mean_kl, qPrintable(QString("mean KL %1").arg(mean_kl)));
}

void TestLlamaCppMatch::greedy_generation_matches_data() { add_rows(); }

void TestLlamaCppMatch::greedy_generation_matches() {
    QFETCH(QString, file);
    const auto [reference, model] = model_of(file);
    QCOMPARE(reference->greedy.size(), std::size_t{kGreedyTokens});
    RequestParams params;
    params.max_new_tokens = kGreedyTokens;
    params.ignore_eos = true; // llgen does not stop at EOS

    Engine alone(config_for_one_request(cpu_config(), model->config(), prompt_.size() + kGreedyTokens), model);
    check_greedy(file, *reference, run_to_completion(alone, prompt_, params).tokens);

    // The same request added fourth among eight, all decoded together.
    Engine batch(cpu_config(), model);
    std::map<RequestId, std::vector<TokenId>> generated;
    batch.set_output_callback([&](const RequestOutput& out) {
        auto& tokens = generated[out.request];
        tokens.insert(tokens.end(), out.tokens.begin(), out.tokens.end());
    });
    const auto others = other_prompts(7);
    RequestId target = 0;
    for (std::size_t i = 0; i < others.size(); ++i) {
        if (i == 3)
            target = batch.add_request(prompt_, params).id();
        batch.add_request(others[i], params).id();
    }
    while (batch.has_work())
        batch.step();
    check_greedy(file + " in a batch of 8", *reference, generated[target]);
}

void TestLlamaCppMatch::nearer_float64_than_llamacpp_data() { add_rows(true); }

// The float64 rows arbitrate between the two engines: ours must keep the
// exact top-1 at the issue's 99% of positions and be at least as near the
// exact distributions as llama.cpp's rows are (MatchBar relies on it).
void TestLlamaCppMatch::nearer_float64_than_llamacpp() {
    QFETCH(QString, file);
    const Reference& llamacpp = *model_of(file).first;
    const Reference exact = read_float64_reference(kDataDir, file, llamacpp);
    const Forced& forced_ours = forced(file);
    const Nearness ours = nearness_to_float64(
        exact, llamacpp, [&](std::size_t p) { return forced_ours.top1[p]; },
        [&](std::size_t p, TokenId t) { return forced_ours.logprob(p, t); });
    const Nearness theirs = llamacpp_nearness(exact, llamacpp);
    qInfo("%s against float64: kvscope top-1 %.4f, mean KL %.2e, widest log-prob difference %.4f; "
          "llama.cpp top-1 %.4f, mean KL %.2e, widest %.4f",
          qPrintable(file), ours.top1, ours.mean_kl, ours.widest, theirs.top1, theirs.mean_kl, theirs.widest);
    QVERIFY2(ours.top1 >= kIssueBar.min_top1, qPrintable(QString("top-1 agreement with float64 %1").arg(ours.top1)));
    QVERIFY2(ours.mean_kl <= theirs.mean_kl,
             qPrintable(QString("mean KL to float64 %1, llama.cpp's %2").arg(ours.mean_kl).arg(theirs.mean_kl)));
}

void TestLlamaCppMatch::check_greedy(const QString& what, const Reference& reference,
                                     const std::vector<TokenId>& ours) {
    QCOMPARE(ours.size(), reference.greedy.size());
    const auto parted = std::mismatch(ours.begin(), ours.end(), reference.greedy.begin());
    if (parted.first == ours.end())
        return;
    const auto i = static_cast<std::size_t>(parted.first - ours.begin());
    const std::vector<TopEntry>& row = reference.top[prompt_.size() - 1 + i];
    auto logprob = [&](TokenId t) { return logprob_in(row, t).value_or(-std::numeric_limits<double>::infinity()); };
    const double gap = std::fabs(logprob(*parted.first) - logprob(*parted.second));
    qInfo("%s: greedy tokens part at %zu of %zu (ours %d, llama.cpp's %d; llama.cpp's log-probs %.4f apart)",
          qPrintable(what), i, ours.size(), *parted.first, *parted.second, gap);
    QVERIFY2(gap <= match_bar(what.section(' ', 0, 0), reference).tie, qPrintable(QString("%1: greedy tokens part at %2 without a tie").arg(what).arg(i)));
}

QTEST_APPLESS_MAIN(TestLlamaCppMatch)
#include "test_llamacpp_match.moc"

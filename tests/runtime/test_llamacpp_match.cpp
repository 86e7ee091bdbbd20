// kvscope against llama.cpp on the same files: the references that
// tests/data/llamacpp/make_references.sh keeps (llama.cpp's lltop and llgen
// on make-model's random-weight models, F16, Q8_0 and Q4_0), so this test
// needs no llama.cpp. Per model file:
// - it is regenerated with make-model's recorded arguments and must have
//   the recorded SHA-256 (else the writer changed and the references are
//   stale: rerun the script);
// - teacher forcing (engine/runtime/teacher_forcing.h, F16 KV as llama.cpp
//   keeps it) over the 576-token prompt and llgen's 64 greedy tokens after
//   it, which cross every window of the cut models: top-1 agreement with
//   llama.cpp and mean KL divergence (see coarse_kl) within the file's
//   MatchBar (support/llamacpp_references.h: the 99% and 1e-3 for
//   F16, llama.cpp's own consistency for quantized weights);
// - 64 greedy tokens through the Engine equal llgen's, alone and as one of
//   8 sequences decoded together, up to the end or to a near-tie: where the
//   two part, llama.cpp's own log-probabilities of both tokens at that
//   position must be within the bar's tie (two engines adding in another
//   order may break a tie either way; llama.cpp's batch scoring and its
//   generation sometimes do too).
// The files checked are KVSCOPE_LLAMACPP_FILES (tests/runtime/
// CMakeLists.txt's list of those that meet the bar), or the environment
// variable of that name, a comma-separated list of architecture-type names
// or architectures (all three types), to try one not yet listed.
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

// KL(llama.cpp || kvscope) with both distributions coarsened to the
// reference's top-k tokens and one outcome for all other tokens together:
// sum over the top-k of p log(p / q), plus p_rest log(p_rest / q_rest). It
// never exceeds the full KL divergence (coarsening cannot increase it), so a
// bound on it is a necessary condition, and with the models' logits spread to
// a standard deviation of about 3 the top 4 hold much of the probability.
double coarse_kl(const std::vector<TopEntry>& reference, const float* row, std::size_t vocab) {
    const double lse = log_sum_exp(row, vocab);
    double kl = 0, p_top = 0, q_top = 0;
    for (const TopEntry& e : reference) {
        const double p = std::exp(e.logprob), log_q = double(row[e.token]) - lse;
        kl += p * (e.logprob - log_q);
        p_top += p;
        q_top += std::exp(log_q);
    }
    const double p_rest = std::max(1.0 - p_top, 1e-12), q_rest = std::max(1.0 - q_top, 1e-12);
    return kl + p_rest * std::log(p_rest / q_rest);
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

private:
    void add_rows();
    // Our greedy tokens equal llama.cpp's, or part from them at a near-tie.
    void check_greedy(const QString& what, const Reference& reference, const std::vector<TokenId>& ours);
    // The row's reference and its model, made once by make-model.
    std::pair<const Reference*, std::shared_ptr<const Model>> model_of(const QString& row);

    QTemporaryDir dir_;
    std::vector<TokenId> prompt_;
    std::map<QString, Reference> references_;
    std::map<QString, std::shared_ptr<const Model>> models_;
};

void TestLlamaCppMatch::initTestCase() {
    QVERIFY(dir_.isValid());
    prompt_ = read_prompt(kDataDir);
    QCOMPARE(prompt_.size(), std::size_t{576});
}

void TestLlamaCppMatch::add_rows() {
    QTest::addColumn<QString>("file");
    for (const QString& file : model_files(KVSCOPE_LLAMACPP_FILES))
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

void TestLlamaCppMatch::teacher_forced_logits_match() {
    QFETCH(QString, file);
    const auto [reference, model] = model_of(file);
    std::vector<TokenId> tokens = prompt_;
    tokens.insert(tokens.end(), reference->greedy.begin(), reference->greedy.end());
    QCOMPARE(reference->top.size(), tokens.size());
    const std::vector<float> logits = teacher_forced_logits(*model, tokens, KvDtype::F16);
    const std::size_t vocab = logits.size() / tokens.size();
    std::size_t agree = 0;
    double kl_sum = 0, kl_max = 0, widest_miss = 0; // our logit margin over llama.cpp's top-1 where we differ
    for (std::size_t p = 0; p < tokens.size(); ++p) {
        const float* row = logits.data() + p * vocab;
        const auto top1 = static_cast<TokenId>(std::max_element(row, row + vocab) - row);
        const TokenId theirs = reference->top[p].front().token;
        agree += top1 == theirs ? 1 : 0;
        widest_miss = std::max(widest_miss, double(row[top1]) - double(row[theirs]));
        const double kl = coarse_kl(reference->top[p], row, vocab);
        kl_sum += kl;
        kl_max = std::max(kl_max, kl);
    }
    const double agreement = double(agree) / double(tokens.size()), mean_kl = kl_sum / double(tokens.size());
    qInfo("%s: top-1 agreement %.4f (where not, our top-1 leads theirs by at most %.3f), mean KL %.2e (max %.2e) "
          "over %zu positions",
          qPrintable(file), agreement, widest_miss, mean_kl, kl_max, tokens.size());
    const MatchBar bar = match_bar(file);
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

    Engine alone(config_for_one_request(cpu_config(), prompt_.size() + kGreedyTokens), model);
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

void TestLlamaCppMatch::check_greedy(const QString& what, const Reference& reference,
                                     const std::vector<TokenId>& ours) {
    QCOMPARE(ours.size(), reference.greedy.size());
    const auto parted = std::mismatch(ours.begin(), ours.end(), reference.greedy.begin());
    if (parted.first == ours.end())
        return;
    const auto i = static_cast<std::size_t>(parted.first - ours.begin());
    const std::vector<TopEntry>& row = reference.top[prompt_.size() - 1 + i];
    auto logprob = [&](TokenId t) {
        for (const TopEntry& e : row)
            if (e.token == t)
                return e.logprob;
        return -std::numeric_limits<double>::infinity();
    };
    const double gap = std::fabs(logprob(*parted.first) - logprob(*parted.second));
    qInfo("%s: greedy tokens part at %zu of %zu (ours %d, llama.cpp's %d; llama.cpp's log-probs %.4f apart)",
          qPrintable(what), i, ours.size(), *parted.first, *parted.second, gap);
    QVERIFY2(gap <= match_bar(what.section(' ', 0, 0)).tie, qPrintable(QString("%1: greedy tokens part at %2 without a tie").arg(what).arg(i)));
}

QTEST_APPLESS_MAIN(TestLlamaCppMatch)
#include "test_llamacpp_match.moc"

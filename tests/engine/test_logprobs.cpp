// Log-probabilities through the engine on stories260K, against teacher
// forcing (engine/runtime/teacher_forcing.h: every position a decode step
// of its own, log-softmax in double): a prompt's log-probabilities are the
// same in one chunk, in chunks of 7, after its blocks went into the prefix
// cache, and after it was preempted mid-prefill (recompute or swap); each
// sampled token's are those of the raw distribution whatever the sampling
// settings; a plain request still takes its prefix from the cache.
#include <QtTest>

#include <algorithm>
#include <memory>
#include <optional>

#include "engine/completion.h"
#include "engine/runtime/perplexity.h"
#include "engine/runtime/teacher_forcing.h"
#include "engine_test_support.h"
#include "../runtime/jsonl.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

constexpr double kTolerance = 1e-3; // chunked prompt kernels vs one decode step per position, in nats
constexpr std::uint32_t kTop = 5;

// The reference file's first prompt, then its generated tokens: a text the
// model knows, long enough for several blocks and chunks.
std::vector<TokenId> story() {
    const QJsonObject row = read_jsonl(test_model_path("stories260K.reference.jsonl")).front();
    std::vector<TokenId> tokens = ids(row["prompt_token_ids"]);
    const std::vector<TokenId> more = ids(row["generated_token_ids"]);
    tokens.insert(tokens.end(), more.begin(), more.begin() + 40);
    return tokens;
}

// Each position's log-softmax, from teacher forcing.
std::vector<std::vector<double>> reference_logprobs(const Model& model, std::span<const TokenId> tokens) {
    const std::size_t vocab = model.config().vocab_size;
    const std::vector<float> logits = teacher_forced_logits(model, tokens, KvDtype::F32, 16, 1);
    std::vector<std::vector<double>> out;
    for (std::size_t p = 0; p < tokens.size(); ++p)
        out.push_back(log_softmax(std::span(logits).subspan(p * vocab, vocab)));
    return out;
}

// `got` is position `p`'s log-probabilities for `token`: its chosen entry,
// and a top list ordered as the reference ranks it.
void expect_position(const PositionLogprobs& got, const std::vector<double>& ref, TokenId token, std::size_t p) {
    const QString where = QStringLiteral("position %1").arg(p);
    QVERIFY2(got.chosen.token == token, qPrintable(where));
    QVERIFY2(std::abs(got.chosen.logprob - ref[static_cast<std::size_t>(token)]) < kTolerance, qPrintable(where));
    QVERIFY2(got.top.size() == kTop, qPrintable(where));
    for (std::size_t i = 0; i < got.top.size(); ++i) {
        QVERIFY2(std::abs(got.top[i].logprob - ref[static_cast<std::size_t>(got.top[i].token)]) < kTolerance,
                 qPrintable(where));
        QVERIFY2(i == 0 || got.top[i].logprob <= got.top[i - 1].logprob, qPrintable(where));
    }
    // Nothing outside the list is clearly more likely than its last entry.
    const double last = got.top.back().logprob;
    const auto more_likely = std::count_if(ref.begin(), ref.end(), [&](double x) { return x > last + kTolerance; });
    QVERIFY2(static_cast<std::size_t>(more_likely) < kTop, qPrintable(where));
}

RequestParams with_prompt_logprobs(std::uint32_t new_tokens) {
    RequestParams p;
    p.max_new_tokens = new_tokens;
    p.ignore_eos = true;
    p.prompt_logprobs = kTop;
    return p;
}

struct Run {
    std::vector<PositionLogprobs> prompt, sampled;
    std::vector<TokenId> tokens;
};

void collect_logprobs(Engine& engine, std::map<RequestId, Run>& runs) {
    engine.set_output_callback([&runs](const RequestOutput& o) {
        Run& r = runs[o.request];
        r.prompt.insert(r.prompt.end(), o.prompt_logprobs.begin(), o.prompt_logprobs.end());
        r.sampled.insert(r.sampled.end(), o.logprobs.begin(), o.logprobs.end());
        r.tokens.insert(r.tokens.end(), o.tokens.begin(), o.tokens.end());
    });
}

} // namespace

class TestLogprobs : public QObject {
    Q_OBJECT

private slots:
    void initTestCase();
    void prompt_logprobs_equal_teacher_forcing_data();
    void prompt_logprobs_equal_teacher_forcing();
    void preemption_mid_prefill_neither_loses_nor_repeats_data();
    void preemption_mid_prefill_neither_loses_nor_repeats();
    void sampled_logprobs_are_the_raw_distribution();
    void only_requests_that_ask_skip_the_prefix_cache();
    void too_many_alternatives_are_refused();

private:
    std::shared_ptr<const Model> model_;
    std::vector<TokenId> story_;
    std::vector<std::vector<double>> reference_;
};

void TestLogprobs::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    model_ = std::make_shared<const Model>(path.toStdString());
    story_ = story();
    reference_ = reference_logprobs(*model_, story_);
}

void TestLogprobs::prompt_logprobs_equal_teacher_forcing_data() {
    QTest::addColumn<int>("budget");
    QTest::addColumn<bool>("cached_first");
    QTest::newRow("one chunk") << 512 << false;
    QTest::newRow("chunks of 7") << 7 << false;
    QTest::newRow("after a plain run cached its blocks") << 512 << true;
}

void TestLogprobs::prompt_logprobs_equal_teacher_forcing() {
    QFETCH(int, budget);
    QFETCH(bool, cached_first);
    EngineConfig c = small_config(64, 4);
    c.max_num_batched_tokens = static_cast<std::uint32_t>(budget);
    Engine engine(c, model_);
    if (cached_first) {
        RequestParams plain;
        plain.max_new_tokens = 1;
        run_to_completion(engine, story_, plain);
    }
    const std::uint64_t hits_before = engine.snapshot()->prefix_hit_tokens;
    const Completion got = run_to_completion(engine, story_, with_prompt_logprobs(1));
    QCOMPARE(engine.snapshot()->prefix_hit_tokens, hits_before); // every position ran
    QCOMPARE(got.prompt_logprobs.size(), story_.size() - 1);
    for (std::size_t t = 1; t < story_.size(); ++t)
        expect_position(got.prompt_logprobs[t - 1], reference_[t - 1], story_[t], t);
    engine.kv().check_invariants();
}

void TestLogprobs::preemption_mid_prefill_neither_loses_nor_repeats_data() {
    QTest::addColumn<int>("preemption");
    QTest::newRow("recompute") << int(PreemptionMode::Recompute);
    QTest::newRow("swap") << int(PreemptionMode::Swap);
}

// A decodes one token a step while B's prompt goes in one token a step
// (a budget of 2); A's growth runs the pool dry mid-way through B's
// prompt, so B, admitted last, is preempted with part of its prompt done.
void TestLogprobs::preemption_mid_prefill_neither_loses_nor_repeats() {
    QFETCH(int, preemption);
    EngineConfig c = small_config(16, 4);
    c.max_num_batched_tokens = 2;
    c.preemption = static_cast<PreemptionMode>(preemption);
    c.swap_blocks = 16;
    Engine engine(c, model_);
    std::map<RequestId, Run> runs;
    collect_logprobs(engine, runs);
    RequestParams a;
    a.max_new_tokens = 36;
    a.ignore_eos = true;
    engine.add_request(std::vector<TokenId>(story_.begin(), story_.begin() + 4), a).id();
    const std::vector<TokenId> prompt(story_.begin(), story_.begin() + 40);
    const RequestId b = engine.add_request(prompt, with_prompt_logprobs(2)).id();
    drain(engine);
    QVERIFY2(engine.snapshot()->preemptions > 0, "the pool must run dry during B's prompt");
    QCOMPARE(runs[b].prompt.size(), prompt.size() - 1);
    for (std::size_t t = 1; t < prompt.size(); ++t)
        expect_position(runs[b].prompt[t - 1], reference_[t - 1], prompt[t], t);
    engine.kv().check_invariants();
}

// Temperature, top-k and a repetition penalty change what is drawn, not
// the log-probabilities reported: those of the raw logits at each position.
void TestLogprobs::sampled_logprobs_are_the_raw_distribution() {
    Engine engine(small_config(64, 4), model_);
    RequestParams p;
    p.max_new_tokens = 12;
    p.ignore_eos = true;
    p.logprobs = kTop;
    p.sampling.temperature = 1.5f;
    p.sampling.top_k = 8;
    p.sampling.repetition_penalty = 1.3f;
    p.sampling.seed = 3;
    const std::vector<TokenId> prompt(story_.begin(), story_.begin() + 10);
    const Completion got = run_to_completion(engine, prompt, p);
    QCOMPARE(got.logprobs.size(), got.tokens.size());
    QVERIFY(got.prompt_logprobs.empty());
    std::vector<TokenId> all = prompt;
    all.insert(all.end(), got.tokens.begin(), got.tokens.end());
    const auto reference = reference_logprobs(*model_, all);
    for (std::size_t i = 0; i < got.tokens.size(); ++i) {
        const std::size_t position = prompt.size() - 1 + i; // whose logits drew token i
        expect_position(got.logprobs[i], reference[position], got.tokens[i], position);
    }
}

void TestLogprobs::only_requests_that_ask_skip_the_prefix_cache() {
    Engine engine(small_config(64, 4), model_);
    RequestParams plain;
    plain.max_new_tokens = 1;
    const Completion first = run_to_completion(engine, story_, plain);
    QVERIFY(first.prompt_logprobs.empty() && first.logprobs.empty());
    run_to_completion(engine, story_, with_prompt_logprobs(1));
    const std::uint64_t hits = engine.snapshot()->prefix_hit_tokens;
    QCOMPARE(hits, std::uint64_t{0});
    run_to_completion(engine, story_, plain);
    QVERIFY(engine.snapshot()->prefix_hit_tokens >= story_.size() - 4);
}

void TestLogprobs::too_many_alternatives_are_refused() {
    Engine engine(small_config(64, 4), model_);
    RequestParams p;
    p.logprobs = kMaxLogprobs;
    QVERIFY(engine.add_request(story_, p).accepted());
    p.logprobs = kMaxLogprobs + 1;
    const Admission sampled = engine.add_request(story_, p);
    QVERIFY(!sampled.accepted());
    QCOMPARE(sampled.refusal()->reason, RefusalReason::BadSampling);
    QVERIFY(sampled.refusal()->message.find("at most 20") != std::string::npos);
    p.logprobs.reset();
    p.prompt_logprobs = kMaxLogprobs + 1;
    QVERIFY(!engine.add_request(story_, p).accepted());
}

QTEST_APPLESS_MAIN(TestLogprobs)
#include "test_logprobs.moc"

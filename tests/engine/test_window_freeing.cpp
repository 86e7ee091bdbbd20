// Freeing what leaves a sliding window changes no output: the same
// requests, run by an engine that frees window blocks and by one that keeps
// every layer whole (swa_full), give the same greedy tokens and the same
// log-probabilities bit for bit (each sampled token's and its 8 most likely
// rivals': functions of the logits, so equal logits give equal values and
// a changed logit shows), at batch 1 and 8, with prefix-cache hits and with
// swap and recompute preemption in the run, in f16 and int8 KV.
//
// Both engines must make the same schedule for the results to be bitwise
// comparable (a prompt chunk's attention adds in another order than decode
// steps'), so memory never decides anything here: the pool is large, and
// preemption comes from the priority policy (a higher-priority request
// waiting for one of max_num_seqs places), which is the same in both.
#include <QtTest>

#include <QTemporaryDir>

#include <bit>

#include "engine_test_support.h"
#include "support/tiny_hybrid_model.h"

using namespace kvscope;
using namespace kvscope::test;

namespace {

struct Run {
    Outputs outputs;
    std::map<std::pair<RequestId, std::uint32_t>, std::vector<PositionLogprobs>> logprobs;
    std::uint64_t preemptions = 0;
    std::uint64_t prefix_hit_tokens = 0;
    std::size_t peak_used_blocks = 0;
    std::size_t left_window_seen = 0; // blocks a snapshot showed as freed by the window
};

// QCOMPARE on floats is fuzzy; these must be the same float.
std::uint32_t bits(float x) { return std::bit_cast<std::uint32_t>(x); }

std::vector<TokenId> prompt_of(std::uint32_t seed, std::size_t length) {
    std::vector<TokenId> p(length);
    for (std::size_t i = 0; i < length; ++i)
        p[i] = static_cast<TokenId>(3 + (seed * 131 + i * 17 + i * i) % 290);
    return p;
}

// Requests 0-3 (priority 5) start; after a few steps 4-7 (priority 0)
// arrive and take their places. 4 and 5 share request 0's first 32 tokens.
Run run(const std::shared_ptr<const Model>& model, KvDtype dtype, PreemptionMode preemption, std::uint32_t batch,
        bool swa_full) {
    EngineConfig c = small_config(4096, 4);
    c.kv_dtype = dtype;
    c.swa_full = swa_full;
    c.preemption = preemption;
    c.scheduling_policy = SchedulingPolicy::Priority;
    c.max_num_seqs = batch == 1 ? 1 : 4;
    c.max_num_batched_tokens = 64;
    Engine engine(c, model);
    Run r;
    engine.set_output_callback([&](const RequestOutput& o) {
        Collected& got = r.outputs[{o.request, o.index}];
        got.tokens.insert(got.tokens.end(), o.tokens.begin(), o.tokens.end());
        if (o.finish)
            got.finish = o.finish;
        auto& lp = r.logprobs[{o.request, o.index}];
        lp.insert(lp.end(), o.logprobs.begin(), o.logprobs.end());
    });
    auto add = [&](std::uint32_t i, std::int32_t priority) {
        std::vector<TokenId> prompt = prompt_of(i, 40 + 3 * i);
        if (i == 4 || i == 5) {
            const std::vector<TokenId> shared = prompt_of(0, 32);
            std::copy(shared.begin(), shared.end(), prompt.begin());
        }
        RequestParams p;
        p.max_new_tokens = 24;
        p.ignore_eos = true;
        p.priority = priority;
        p.logprobs = 8;
        QVERIFY(engine.add_request(prompt, p).accepted());
    };
    for (std::uint32_t i = 0; i < 4; ++i)
        add(i, 5);
    for (int step = 0; engine.has_work(); ++step) {
        if (step == 6)
            for (std::uint32_t i = 4; i < 8; ++i)
                add(i, 0);
        engine.step();
        const auto snap = engine.snapshot();
        r.peak_used_blocks = std::max(r.peak_used_blocks, snap->pool->fragmentation.used_blocks);
        for (const BlockInfo& b : snap->pool->blocks)
            r.left_window_seen += b.left_window;
        engine.kv().check_invariants();
    }
    const auto snap = engine.snapshot();
    r.preemptions = snap->preemptions;
    r.prefix_hit_tokens = snap->pool->prefix_hit_tokens;
    return r;
}

} // namespace

class TestWindowFreeing : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void same_outputs_with_and_without_freeing_data();
    void same_outputs_with_and_without_freeing();

private:
    QTemporaryDir dir_;
    std::shared_ptr<const Model> model_;
};

void TestWindowFreeing::initTestCase() {
    QVERIFY(dir_.isValid());
    model_ = std::make_shared<const Model>(write_tiny_hybrid_model(dir_.filePath("hybrid.gguf").toStdString()));
    QVERIFY(model_->config().has_windows());
}

void TestWindowFreeing::same_outputs_with_and_without_freeing_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("preemption");
    QTest::addColumn<int>("batch");
    QTest::newRow("f16, swap, batch 8") << int(KvDtype::F16) << int(PreemptionMode::Swap) << 8;
    QTest::newRow("int8, recompute, batch 8") << int(KvDtype::Int8) << int(PreemptionMode::Recompute) << 8;
    QTest::newRow("f16, batch 1") << int(KvDtype::F16) << int(PreemptionMode::Swap) << 1;
}

void TestWindowFreeing::same_outputs_with_and_without_freeing() {
    QFETCH(int, dtype);
    QFETCH(int, preemption);
    QFETCH(int, batch);
    const auto d = static_cast<KvDtype>(dtype);
    const auto m = static_cast<PreemptionMode>(preemption);
    const Run freeing = run(model_, d, m, static_cast<std::uint32_t>(batch), false);
    const Run whole = run(model_, d, m, static_cast<std::uint32_t>(batch), true);

    QCOMPARE(freeing.outputs.size(), std::size_t{8});
    QVERIFY(freeing.prefix_hit_tokens > 0);
    QCOMPARE(freeing.prefix_hit_tokens, whole.prefix_hit_tokens);
    QCOMPARE(freeing.preemptions, whole.preemptions);
    if (batch > 1)
        QVERIFY(freeing.preemptions > 0);
    QVERIFY(freeing.left_window_seen > 0);
    QCOMPARE(whole.left_window_seen, std::size_t{0});
    QVERIFY(freeing.peak_used_blocks < whole.peak_used_blocks);
    for (const auto& [key, got] : whole.outputs) {
        const Collected& f = freeing.outputs.at(key);
        QCOMPARE(f.tokens, got.tokens);
        QCOMPARE(f.tokens.size(), std::size_t{24});
        const auto& a = freeing.logprobs.at(key);
        const auto& b = whole.logprobs.at(key);
        QCOMPARE(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
            QCOMPARE(bits(a[i].chosen.logprob), bits(b[i].chosen.logprob));
            QCOMPARE(a[i].top.size(), b[i].top.size());
            for (std::size_t k = 0; k < a[i].top.size(); ++k) {
                QCOMPARE(a[i].top[k].token, b[i].top[k].token);
                QCOMPARE(bits(a[i].top[k].logprob), bits(b[i].top[k].logprob));
            }
        }
    }
    qInfo("%s: %llu preemptions, %llu prefix-hit tokens, peak blocks %zu freeing vs %zu whole",
          QTest::currentDataTag(), static_cast<unsigned long long>(freeing.preemptions),
          static_cast<unsigned long long>(freeing.prefix_hit_tokens), freeing.peak_used_blocks, whole.peak_used_blocks);
}

QTEST_APPLESS_MAIN(TestWindowFreeing)
#include "test_window_freeing.moc"

// A prompt may take from the prefix cache only blocks whose K/V some step
// has computed. Request A (a long prompt, prefilled 64 tokens a step) is
// preempted part way by a request B of higher priority with the same
// prompt: B's output must be what B gives alone, though A's later blocks
// were never computed (before blocks joined the cache when their tokens
// were known, B took them and read K/V nobody had written).
#include <QtTest>

#include "engine_test_support.h"

using namespace kvscope;
using namespace kvscope::test;

class TestPrefixCacheSafety : public QObject {
    Q_OBJECT
private slots:
    void a_preempted_prefill_offers_only_what_it_computed_data();
    void a_preempted_prefill_offers_only_what_it_computed();
};

namespace {

std::vector<TokenId> long_prompt() {
    std::vector<TokenId> p(300);
    for (std::size_t i = 0; i < p.size(); ++i)
        p[i] = static_cast<TokenId>(3 + (i * 37) % 500);
    return p;
}

EngineConfig config(PreemptionMode preemption) {
    EngineConfig c = small_config(64, 16);
    c.max_num_batched_tokens = 64;
    c.max_num_seqs = 1;
    c.scheduling_policy = SchedulingPolicy::Priority;
    c.preemption = preemption;
    return c;
}

RequestParams params(std::int32_t priority) {
    RequestParams p;
    p.max_new_tokens = 16;
    p.ignore_eos = true;
    p.priority = priority;
    return p;
}

} // namespace

void TestPrefixCacheSafety::a_preempted_prefill_offers_only_what_it_computed_data() {
    QTest::addColumn<int>("preemption");
    QTest::newRow("recompute") << int(PreemptionMode::Recompute);
    QTest::newRow("swap") << int(PreemptionMode::Swap);
}

void TestPrefixCacheSafety::a_preempted_prefill_offers_only_what_it_computed() {
    QFETCH(int, preemption);
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto model = std::make_shared<const Model>(path.toStdString());
    const auto mode = static_cast<PreemptionMode>(preemption);

    Engine alone(config(mode), model);
    Outputs expected;
    collect_into(alone, expected);
    const RequestId solo = alone.add_request(long_prompt(), params(0)).id();
    drain(alone);

    Engine engine(config(mode), model);
    Outputs got;
    collect_into(engine, got);
    const RequestId a = engine.add_request(long_prompt(), params(5)).id();
    engine.step();
    engine.step(); // A has 128 of its 300 prompt tokens computed
    const RequestId b = engine.add_request(long_prompt(), params(0)).id();
    engine.step(); // B takes A's place and its computed blocks, no more
    const auto snap = engine.snapshot();
    QCOMPARE(snap->preemptions, std::uint64_t{1});
    QCOMPARE(snap->pool->prefix_hit_tokens, std::uint64_t{128});
    drain(engine);
    QCOMPARE(of(got, b, 0).tokens, of(expected, solo, 0).tokens);
    QCOMPARE(of(got, a, 0).tokens, of(expected, solo, 0).tokens);
}

QTEST_APPLESS_MAIN(TestPrefixCacheSafety)
#include "test_prefix_cache_safety.moc"

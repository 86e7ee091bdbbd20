// The serving engine on stories260K: greedy tokens equal run.c's reference
// whether a request runs alone, in a busy batch, after preemption (recompute
// or swap) or with its prefix from the cache; parallel samples share blocks;
// impossible requests fail alone, and so does a request a kernel refuses;
// each engine keeps its own thread count; a conversation's next turn reuses
// the blocks of the last.
#include <QtTest>

#include <algorithm>
#include <climits>
#include <optional>
#include <set>
#include <stdexcept>

#include "engine/chat/conversation.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/vocabulary.h"
#include "engine_test_support.h"
#include "../runtime/jsonl.h"

using namespace kvscope;
using namespace kvscope::test;

Q_DECLARE_METATYPE(kvscope::KvDtype)

namespace {

struct Reference {
    std::vector<TokenId> prompt, generated;
};

std::vector<Reference> references() {
    std::vector<Reference> refs;
    for (const QJsonObject& row : read_jsonl(test_model_path("stories260K.reference.jsonl")))
        refs.push_back({ids(row["prompt_token_ids"]), ids(row["generated_token_ids"])});
    return refs;
}

RequestParams greedy(std::uint32_t n_tokens) {
    RequestParams p;
    p.max_new_tokens = n_tokens;
    p.ignore_eos = true; // run.c never stops on EOS
    return p;
}

// The real forward pass, except that once a chunk has held the poison
// token, every later batch with a chunk of that sequence is refused with
// std::invalid_argument, as the CPU kernels refuse -- after running, as a
// kernel of a late layer would, when the batch's K/V are written.
class RefusingPass : public ForwardPass {
public:
    RefusingPass(std::unique_ptr<ForwardPass> inner, TokenId poison) : inner_(std::move(inner)), poison_(poison) {}
    const ModelConfig& config() const override { return inner_->config(); }

protected:
    void forward_batch(std::span<const SeqChunk> batch, KvCacheManager& kv, std::vector<float>& logits) override {
        inner_->forward(batch, kv, logits);
        for (const SeqChunk& c : batch) {
            if (poisoned_ == c.seq)
                throw std::invalid_argument("paged_attention: refused by the test");
            if (!poisoned_ && std::find(c.tokens.begin(), c.tokens.end(), poison_) != c.tokens.end())
                poisoned_ = c.seq;
        }
    }

private:
    std::unique_ptr<ForwardPass> inner_;
    TokenId poison_;
    std::optional<SeqId> poisoned_;
};

// A token none of the references' prompts or generations holds.
TokenId unused_token(const std::vector<Reference>& refs) {
    std::set<TokenId> used;
    for (const Reference& r : refs) {
        used.insert(r.prompt.begin(), r.prompt.end());
        used.insert(r.generated.begin(), r.generated.end());
    }
    TokenId t = 3;
    while (used.contains(t))
        ++t;
    return t;
}

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void greedy_equals_reference_in_every_situation_data();
    void greedy_equals_reference_in_every_situation();
    void prefix_cache_shares_a_system_prompt();
    void parallel_samples_share_the_prompt();
    void impossible_requests_are_refused_alone();
    void a_kernel_refusal_ends_only_its_request_data();
    void a_kernel_refusal_ends_only_its_request();
    void n_beyond_the_cap_is_refused();
    void each_engine_keeps_its_threads();
    void abort_frees_blocks();
    void stop_strings_cut_the_text();
    void a_drawn_reply_length_ends_the_request();
    void snapshot_counts();
    void a_conversation_reuses_its_blocks_turn_after_turn();
    void waiting_sequences_know_their_queue_position();
    void turn_encoder_writes_what_follows_a_reply();

private:
    std::shared_ptr<const Model> model_;
};

void TestEngine::initTestCase() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    model_ = std::make_shared<const Model>(path.toStdString());
}

void TestEngine::greedy_equals_reference_in_every_situation_data() {
    QTest::addColumn<int>("blocks");
    QTest::addColumn<int>("block_size");
    QTest::addColumn<int>("preemption");
    QTest::addColumn<int>("allocation");
    QTest::addColumn<int>("budget");
    QTest::newRow("roomy paged batch") << 256 << 16 << int(PreemptionMode::Recompute) << int(AllocationMode::Paged) << 512;
    QTest::newRow("chunked prefill") << 256 << 16 << int(PreemptionMode::Recompute) << int(AllocationMode::Paged) << 7;
    QTest::newRow("tight pool, recompute") << 14 << 8 << int(PreemptionMode::Recompute) << int(AllocationMode::Paged) << 512;
    QTest::newRow("tight pool, swap") << 14 << 8 << int(PreemptionMode::Swap) << int(AllocationMode::Paged) << 512;
    QTest::newRow("contiguous") << 40 << 8 << int(PreemptionMode::Recompute) << int(AllocationMode::Contiguous) << 512;
}

void TestEngine::greedy_equals_reference_in_every_situation() {
    QFETCH(int, blocks);
    QFETCH(int, block_size);
    QFETCH(int, preemption);
    QFETCH(int, allocation);
    QFETCH(int, budget);
    EngineConfig c = small_config(static_cast<std::uint32_t>(blocks), static_cast<std::uint32_t>(block_size));
    c.preemption = static_cast<PreemptionMode>(preemption);
    c.allocation = static_cast<AllocationMode>(allocation);
    c.max_num_batched_tokens = static_cast<std::uint32_t>(budget);
    Engine engine(c, model_);
    Outputs out;
    collect_into(engine, out);
    const auto refs = references();
    std::vector<RequestId> ids;
    for (const Reference& r : refs)
        ids.push_back(engine.add_request(r.prompt, greedy(static_cast<std::uint32_t>(r.generated.size()))).id());
    drain(engine);
    for (std::size_t i = 0; i < refs.size(); ++i) {
        const Collected& got = out[{ids[i], 0}];
        QCOMPARE(got.finish, std::optional(FinishReason::Length));
        QVERIFY2(got.tokens == refs[i].generated, qPrintable(QStringLiteral("request %1").arg(i)));
    }
    if (blocks == 14)
        QVERIFY2(engine.snapshot()->preemptions > 0, "the tight pool must force preemption");
    QCOMPARE(engine.kv().fragmentation().free_blocks, std::size_t(blocks));
    engine.kv().check_invariants();
}

void TestEngine::prefix_cache_shares_a_system_prompt() {
    EngineConfig c = small_config(128, 4);
    Engine engine(c, model_);
    Outputs out;
    collect_into(engine, out);
    const auto refs = references();
    const RequestId first = engine.add_request(refs[0].prompt, greedy(48)).id();
    drain(engine);
    // The same prompt again: its full blocks come from the cache.
    const RequestId second = engine.add_request(refs[0].prompt, greedy(48)).id();
    drain(engine);
    QVERIFY(engine.snapshot()->prefix_hit_tokens >= 4);
    QCOMPARE(of(out, second, 0).tokens, of(out, first, 0).tokens);
    QCOMPARE(of(out, second, 0).tokens, refs[0].generated);
}

void TestEngine::parallel_samples_share_the_prompt() {
    EngineConfig c = small_config(128, 4);
    Engine engine(c, model_);
    Outputs out;
    collect_into(engine, out);
    RequestParams p;
    p.n = 4;
    p.max_new_tokens = 20;
    p.ignore_eos = true;
    p.sampling.temperature = 1.0f;
    p.sampling.seed = 11;
    const std::vector<TokenId> prompt(13, 300); // 3 full blocks + 1 token
    const RequestId id = engine.add_request(prompt, p).id();
    engine.step(); // prefill, first tokens, fork
    const auto snap = engine.snapshot();
    QCOMPARE(snap->seqs.size(), std::size_t{4});
    auto shared_by_all = [](const EngineSnapshot& s) {
        int n = 0;
        for (const BlockInfo& b : s.pool->blocks)
            n += b.state == BlockState::Shared && b.ref_count == 4;
        return n;
    };
    QCOMPARE(shared_by_all(*snap), 4); // all 4 prompt blocks, the partly filled tail too
    engine.step();                     // each appends its first token: the tail is copied on write
    QCOMPARE(shared_by_all(*engine.snapshot()), 3);
    drain(engine);
    std::set<std::vector<TokenId>> distinct;
    for (std::uint32_t i = 0; i < 4; ++i) {
        QCOMPARE(of(out, id, i).tokens.size(), std::size_t{20});
        distinct.insert(of(out, id, i).tokens);
    }
    QVERIFY(distinct.size() > 1); // different seeds, different samples
    QCOMPARE(engine.kv().fragmentation().used_blocks, std::size_t{0});
}

void TestEngine::impossible_requests_are_refused_alone() {
    EngineConfig c = small_config(8, 16); // 128 slots
    Engine engine(c, model_);
    Outputs out;
    collect_into(engine, out);
    const auto refs = references();
    const RequestId ok = engine.add_request(refs[1].prompt, greedy(48)).id();
    struct Case {
        std::vector<TokenId> prompt;
        std::uint32_t max_new_tokens;
        RefusalReason reason;
        const char* says;
    };
    const std::vector<Case> cases{
        {std::vector<TokenId>(100, 300), 100, RefusalReason::OverPool, "never fit"},
        {std::vector<TokenId>(500, 300), 20, RefusalReason::OverContext, "context of 512"},
        {{}, 5, RefusalReason::EmptyPrompt, "empty"},
        {{1, 99999}, 5, RefusalReason::TokenOutsideVocab, "99999"},
    };
    for (const Case& k : cases) {
        const Admission a = engine.add_request(k.prompt, greedy(k.max_new_tokens));
        QVERIFY(!a.accepted());
        QCOMPARE(a.refusal()->reason, k.reason);
        QCOMPARE(a.refusal()->prompt_tokens, static_cast<std::uint32_t>(k.prompt.size()));
        QCOMPARE(a.refusal()->max_new_tokens, k.max_new_tokens);
        QVERIFY2(QString::fromStdString(a.refusal()->message).contains(k.says), a.refusal()->message.c_str());
        QVERIFY_THROWS_EXCEPTION(Error, a.id());
    }
    const Admission over_pool = engine.add_request(cases[0].prompt, greedy(100));
    QVERIFY(over_pool.refusal()->pool);
    QCOMPARE(over_pool.refusal()->pool->total_blocks, std::size_t{8}); // what the pool holds
    QCOMPARE(over_pool.refusal()->pool->blocks_needed, std::size_t{13}); // 200 tokens in blocks of 16
    drain(engine);
    QCOMPARE(of(out, ok, 0).tokens, refs[1].generated);
    QCOMPARE(out.size(), std::size_t{1}); // a refused request has no output
    QCOMPARE(engine.snapshot()->refused_requests, std::uint64_t{cases.size() + 1});
    QCOMPARE(engine.snapshot()->completed_requests, std::uint64_t{1});
}

void TestEngine::a_kernel_refusal_ends_only_its_request_data() {
    QTest::addColumn<KvDtype>("dtype");
    QTest::newRow("f32") << KvDtype::F32;
    // KIVI: the failed batch sealed a block of the long prompt's chunk and
    // wrote the next block's rows over its f16 tail; the rerun starts that
    // chunk at its block's start, so the tail is whole again.
    QTest::newRow("int4-kivi") << KvDtype::Int4Kivi;
}

void TestEngine::a_kernel_refusal_ends_only_its_request() {
    QFETCH(KvDtype, dtype);
    const auto refs = references();
    const TokenId poison = unused_token(refs);
    EngineConfig c = small_config(64, 8);
    c.kv_dtype = dtype;
    c.max_num_batched_tokens = 12;
    // Step 1: the poisoned prompt (10 tokens) and 2 tokens of `longer`;
    // step 2: the poisoned decode (refused) with longer's chunk [2, 13),
    // which starts inside block 0 and seals it.
    std::vector<TokenId> longer = refs[0].prompt;
    longer.insert(longer.end(), refs[0].generated.begin(), refs[0].generated.begin() + 15);
    const std::vector<TokenId> poisoned{1, 403, poison, 407, 261, 378, 300, 301, 302, 303};
    const auto alone = [&](const std::vector<TokenId>& prompt) {
        Engine engine(c, model_);
        Outputs out;
        collect_into(engine, out);
        const RequestId id = engine.add_request(prompt, greedy(30)).id();
        drain(engine);
        return of(out, id, 0).tokens;
    };
    Engine engine(c, model_, [poison](Backend b, const Model& m, const KvLayout& l, int threads) {
        return std::make_unique<RefusingPass>(make_forward_pass(b, m, l, threads), poison);
    });
    Outputs out;
    collect_into(engine, out);
    const RequestId refused = engine.add_request(poisoned, greedy(30)).id();
    const RequestId first = engine.add_request(longer, greedy(30)).id();
    const RequestId last = engine.add_request(refs[1].prompt, greedy(30)).id();
    drain(engine);
    QCOMPARE(of(out, refused, 0).finish, std::optional(FinishReason::Error));
    QVERIFY2(QString::fromStdString(of(out, refused, 0).error).contains("refused by the test"),
             of(out, refused, 0).error.c_str());
    for (const auto& [id, prompt] : {std::pair{first, longer}, std::pair{last, refs[1].prompt}}) {
        QCOMPARE(of(out, id, 0).finish, std::optional(FinishReason::Length));
        QCOMPARE(of(out, id, 0).tokens, alone(prompt));
    }
    QCOMPARE(engine.kv().fragmentation().used_blocks, std::size_t{0});
}

void TestEngine::n_beyond_the_cap_is_refused() {
    Engine engine(small_config(8), model_);
    int outputs = 0;
    engine.set_output_callback([&](const RequestOutput&) { ++outputs; });
    for (const std::uint32_t n : {kMaxSamplesPerRequest + 1, std::uint32_t{UINT32_MAX}}) {
        RequestParams p = greedy(4);
        p.n = n;
        const Admission a = engine.add_request(std::vector<TokenId>{1, 403}, p);
        QVERIFY(!a.accepted());
        QCOMPARE(a.refusal()->reason, RefusalReason::BadCount);
        QCOMPARE(a.refusal()->n, n);
        QVERIFY2(QString::fromStdString(a.refusal()->message).contains("at most 128"), a.refusal()->message.c_str());
    }
    QCOMPARE(outputs, 0);
    QVERIFY(!engine.has_work());
}

void TestEngine::each_engine_keeps_its_threads() {
    EngineConfig one = small_config(16), three = small_config(16);
    one.threads = 1;
    three.threads = 3;
    Engine a(one, model_);
    Engine b(three, model_); // used to set the kernels' global count under a's feet
    QCOMPARE(a.threads(), 1);
    QCOMPARE(b.threads(), 3);
    // Interleaved steps, each at its own count, give run.c's tokens.
    const auto refs = references();
    Outputs out_a, out_b;
    collect_into(a, out_a);
    collect_into(b, out_b);
    const RequestId ra = a.add_request(refs[0].prompt, greedy(static_cast<std::uint32_t>(refs[0].generated.size()))).id();
    const RequestId rb = b.add_request(refs[1].prompt, greedy(static_cast<std::uint32_t>(refs[1].generated.size()))).id();
    while (a.has_work() || b.has_work()) {
        a.step();
        b.step();
    }
    QCOMPARE(of(out_a, ra, 0).tokens, refs[0].generated);
    QCOMPARE(of(out_b, rb, 0).tokens, refs[1].generated);
    QCOMPARE(a.threads(), 1);
}

void TestEngine::abort_frees_blocks() {
    Engine engine(small_config(64, 8), model_);
    Outputs out;
    collect_into(engine, out);
    const RequestId id = engine.add_request(references()[0].prompt, greedy(48)).id();
    engine.step();
    engine.step();
    QVERIFY(engine.kv().fragmentation().used_blocks > 0);
    engine.abort(id);
    QCOMPARE(of(out, id, 0).finish, std::optional(FinishReason::Abort));
    QVERIFY(!engine.has_work());
    QCOMPARE(engine.kv().fragmentation().used_blocks, std::size_t{0});
}

void TestEngine::stop_strings_cut_the_text() {
    Engine engine(small_config(64, 8), model_);
    Outputs out;
    collect_into(engine, out);
    RequestParams p = greedy(48);
    p.stop_strings = {"Lily"};
    const RequestId id = engine.add_request("Once upon a time", p).id(); // "..., there was a little girl named Lily."
    drain(engine);
    QCOMPARE(of(out, id, 0).finish, std::optional(FinishReason::Stop));
    QCOMPARE(QString::fromStdString(of(out, id, 0).text), QStringLiteral(", there was a little girl named "));
}

void TestEngine::a_drawn_reply_length_ends_the_request() {
    // Benchmarks replay drawn reply lengths: the request asks for up to 40
    // tokens and ends with Stop after 7 (the 8th sample plays EOS), the
    // greedy tokens unchanged.
    Engine engine(small_config(64, 8), model_);
    Outputs out;
    collect_into(engine, out);
    const Reference ref = references().front();
    RequestParams p = greedy(40);
    p.end_after_tokens = 7;
    const RequestId id = engine.add_request(ref.prompt, p).id();
    drain(engine);
    QCOMPARE(of(out, id, 0).finish, std::optional(FinishReason::Stop));
    QCOMPARE(of(out, id, 0).tokens, std::vector<TokenId>(ref.generated.begin(), ref.generated.begin() + 7));
    QCOMPARE(engine.kv().pool().num_free(), engine.kv().config().num_blocks);
}

void TestEngine::snapshot_counts() {
    Engine engine(small_config(64, 8), model_);
    const auto refs = references();
    std::uint32_t prompt_tokens = 0;
    for (int i = 0; i < 3; ++i) {
        engine.add_request(refs[static_cast<std::size_t>(i)].prompt, greedy(10)).id();
        prompt_tokens += static_cast<std::uint32_t>(refs[static_cast<std::size_t>(i)].prompt.size());
    }
    engine.step(); // the three prompts, whole
    QCOMPARE(engine.last_batch().prefill_tokens, prompt_tokens);
    QCOMPARE(engine.last_batch().decodes, 0u);
    auto s1 = engine.snapshot();
    QCOMPARE(s1->running, std::size_t{3});
    QCOMPARE(s1->step, std::uint64_t{1});
    // swap_blocks 0 with swap preemption: the default host swap pool
    QCOMPARE(s1->pool->swap_blocks_total, kSwapPoolsPerKvPool * 64);
    for (const SeqSnapshot& seq : s1->seqs) // what a contiguous allocator would reserve
        QCOMPARE(s1->kv_row(seq.seq)->max_tokens, seq.prompt_tokens + 10);
    engine.step(); // one token each
    QCOMPARE(engine.last_batch().prefill_tokens, 0u);
    QCOMPARE(engine.last_batch().decodes, 3u);
    drain(engine);
    auto s2 = engine.snapshot();
    QVERIFY(s2->step > s1->step && s2->time_s >= s1->time_s);
    QCOMPARE(s2->completed_requests, std::uint64_t{3});
    QCOMPARE(s2->generated_tokens, std::uint64_t{30});
    QVERIFY(s2->ttft.p50_ms > 0 && s2->ttft.p95_ms >= s2->ttft.p50_ms);
    QVERIFY(s2->itl.p50_ms > 0);
    QCOMPARE(s2->pool->fragmentation.used_blocks, std::size_t{0});
}

// engine/chat on the real template and tokenizer: turn 2's prompt is turn
// 1's prompt and reply ids as sampled, then the new turn; the prefix cache
// serves every full block turn 1 computed (all but its last sampled token,
// which never went through the model).
void TestEngine::a_conversation_reuses_its_blocks_turn_after_turn() {
    constexpr std::uint32_t kBlock = 4;
    Engine engine(small_config(256, kBlock), model_);
    std::vector<TokenId> reply;
    std::string text;
    engine.set_output_callback([&](const RequestOutput& o) {
        reply.insert(reply.end(), o.tokens.begin(), o.tokens.end());
        text += o.text;
    });
    const ChatTemplate chat = ChatTemplate::for_model(model_->file(), engine.tokenizer());
    const TurnEncoder encoder = TurnEncoder::through(chat, engine.tokenizer());
    RequestParams params;
    params.max_new_tokens = 40;
    Conversation conversation; // two short turns: far from the context's edge
    conversation.add_user("Once upon a time", encoder);
    const std::vector<TokenId> first = conversation.tokens();
    engine.add_request(first, params).id();
    drain(engine);
    QVERIFY(!reply.empty());
    conversation.add_reply(reply, text);
    conversation.add_user("The dog ran home.", encoder);
    const std::vector<TokenId> second = conversation.tokens();

    std::vector<TokenId> expected = first;
    expected.insert(expected.end(), reply.begin(), reply.end());
    QVERIFY(second.size() > expected.size());
    QVERIFY(std::equal(expected.begin(), expected.end(), second.begin()));
    const std::uint64_t hits_before = engine.snapshot()->prefix_hit_tokens;
    engine.add_request(second, params).id();
    engine.step(); // admitted: its prefix looked up
    const std::uint64_t computed_by_turn_1 = expected.size() - 1;
    QVERIFY2(engine.snapshot()->prefix_hit_tokens - hits_before >= computed_by_turn_1 / kBlock * kBlock,
             qPrintable(QStringLiteral("%1 hits for %2 tokens")
                            .arg(engine.snapshot()->prefix_hit_tokens - hits_before)
                            .arg(computed_by_turn_1)));
}

void TestEngine::waiting_sequences_know_their_queue_position() {
    EngineConfig c = small_config(64, 8);
    c.max_num_seqs = 1;
    Engine engine(c, model_);
    const auto refs = references();
    for (int i = 0; i < 3; ++i)
        engine.add_request(refs[static_cast<std::size_t>(i)].prompt, greedy(10)).id();
    engine.step();
    const auto s = engine.snapshot();
    QCOMPARE(s->seqs.size(), std::size_t{3});
    QCOMPARE(s->seqs[0].status, SeqStatus::Running);
    QCOMPARE(s->seqs[0].queue_position, std::nullopt);
    QCOMPARE(s->seqs[1].queue_position, std::optional<std::uint32_t>(0));
    QCOMPARE(s->seqs[2].queue_position, std::optional<std::uint32_t>(1));
}

// TurnEncoder on a real vocabulary (cl100k's, with ChatML's tokens) and
// the ChatML template: an end of turn the model sampled is not written
// again, one it did not sample is.
void TestEngine::turn_encoder_writes_what_follows_a_reply() {
    KVSCOPE_REQUIRE_MODEL(path, "tokenizers/llama3-bpe-vocab.gguf");
    const Tokenizer tokenizer(read_vocabulary(GgufFile(path.toStdString())));
    const ChatTemplate chat("{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' }}",
                            "<|endoftext|>", "<|endoftext|>");
    QCOMPARE(chat.family(), ChatFamily::chatml);
    const TurnEncoder encoder = TurnEncoder::through(chat, tokenizer);
    const EncodeOptions special{.add_special = false, .parse_special = true};
    const TokenId end = tokenizer.encode("<|im_end|>", special).at(0);
    QVERIFY(tokenizer.is_stop_token(end));
    const std::vector<TokenId> next =
        tokenizer.encode("\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", special);
    QCOMPARE(encoder.after_reply(std::vector<TokenId>{1000, end}, "Hi"), next);
    std::vector<TokenId> closed{end};
    closed.insert(closed.end(), next.begin(), next.end());
    QCOMPARE(encoder.after_reply(std::vector<TokenId>{1000}, "Hi"), closed); // a reply cut at its token limit
    QCOMPARE(encoder.opening(std::nullopt, "Hi"),
             tokenizer.encode("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", special));
}

QTEST_APPLESS_MAIN(TestEngine)
#include "test_engine.moc"

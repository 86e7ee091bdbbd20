// The CPU forward pass of a mixture-of-experts model (runner.h's
// moe_block, expert_packs.h), on make-model's cut-down gpt-oss and
// qwen3moe (random weights; what they compute is test_llamacpp_match's
// business, against llama.cpp):
// - an expert no token routes to is not packed, so its pages of the file
//   are never read by the CPU pass: one token packs exactly `used` experts
//   per layer;
// - grouping a batch's tokens by expert changes nothing a sequence sees:
//   several sequences' prompts in one step give each the logits it gets
//   alone;
// - engines sharing a Model share its experts' packed copies, packed once
//   whichever thread asks first.
#include <QtTest>

#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "engine/model/synthetic_model.h"
#include "engine/runtime/expert_packs.h"
#include "engine/runtime/model.h"
#include "engine/runtime/runner.h"
#include "kernels/cpu/packed_kernel.h"

using namespace kvscope;

namespace {

// A cut-down preset in Q8_0: 2 layers (gpt-oss: a window layer and a
// full one), 16 experts, a small vocabulary and FFN.
std::string write_model(const QTemporaryDir& dir, const char* preset) {
    GeometryCut cut;
    cut.layers = 2;
    cut.vocab = 512;
    cut.ffn = 64;
    cut.experts = 16;
    const std::string path = dir.filePath(QString::fromLatin1(preset) + QStringLiteral(".gguf")).toStdString();
    write_synthetic_model(cut_geometry(find_model_preset(preset), cut), GgmlType::Q8_0, 5, path);
    return path;
}

struct Prompt {
    SeqId seq;
    std::vector<TokenId> tokens;
};

KvCacheManager make_kv(const ModelConfig& c) {
    return KvCacheManager({KvLayout(c.kv_geometry(), KvDtype::F32, 16), 64, AllocationMode::Paged, false, 0, 0.0});
}

// The last row of logits of each prompt, all prompts in one step.
std::vector<std::vector<float>> last_logits(const Model& model, const std::vector<Prompt>& prompts, int threads) {
    const ModelConfig& c = model.config();
    KvCacheManager kv = make_kv(c);
    std::vector<SeqChunk> batch;
    for (const Prompt& p : prompts) {
        kv.allocate(p.seq, p.tokens, static_cast<std::uint32_t>(p.tokens.size()));
        batch.push_back({p.seq, p.tokens, 0, true});
    }
    Runner runner(c, model.cpu_weights(threads), kv.layout(), threads);
    const std::vector<float> all = runner.forward(batch, kv);
    std::vector<std::vector<float>> rows;
    for (std::size_t i = 0; i < prompts.size(); ++i)
        rows.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(i * c.vocab_size),
                          all.begin() + static_cast<std::ptrdiff_t>((i + 1) * c.vocab_size));
    return rows;
}

double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    return diff;
}

} // namespace

class TestMoeForward : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::string gpt_oss_, qwen3moe_; // written once: each Model below maps a file afresh

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        gpt_oss_ = write_model(dir_, "gpt-oss-20b");
        qwen3moe_ = write_model(dir_, "qwen3-30b-a3b");
    }
    void one_token_packs_only_its_experts();
    void batch_grouping_changes_no_sequence();
    void engines_share_the_expert_packs();
};

void TestMoeForward::one_token_packs_only_its_experts() {
    const Model model(gpt_oss_);
    const ModelConfig& c = model.config();
    QCOMPARE(c.experts.count, 16u);
    QCOMPARE(c.experts.used, 4u);
    QVERIFY(model.cpu_weights().expert_packs != nullptr);
    const kernels::cpu::WeightType expert_type = model.weights().layers[0].experts.gate[0].type;
    if (kernels::cpu::detail::best_packed_gemm(expert_type, kernels::cpu::best_simd_path()).fn == nullptr)
        QSKIP("no tile kernels for Q8_0 on this CPU: experts are read as the file holds them");
    last_logits(model, {{1, {7}}}, 1);
    const ExpertPacks& packs = *model.cpu_weights().expert_packs;
    // Gate, up and down of `used` experts in each layer, nothing else.
    QCOMPARE(packs.packed_count(), std::size_t{c.n_layers} * c.experts.used * 3);
    const WeightMatrix& m = model.weights().layers[0].experts.gate[0];
    QVERIFY(packs.packed_bytes() >= packs.packed_count() / 3 * m.rows * m.row_bytes);
}

void TestMoeForward::batch_grouping_changes_no_sequence() {
    // Four prompts in one step route ~4 x 20 tokens between 16 experts, so
    // each expert's product mixes rows of several sequences; each
    // sequence's logits must not depend on the others' (the matrix
    // products are row-independent; only summation order may differ).
    for (const std::string* file : {&gpt_oss_, &qwen3moe_}) {
        const Model model(*file);
        const QString preset = QString::fromStdString(model.config().architecture);
        std::vector<Prompt> prompts;
        for (SeqId s = 1; s <= 4; ++s) {
            Prompt p{s, {}};
            for (std::uint32_t i = 0; i < 16 + 3 * s; ++i)
                p.tokens.push_back(static_cast<TokenId>(3 + (s * 131 + i * 37) % 500));
            prompts.push_back(p);
        }
        const std::vector<std::vector<float>> together = last_logits(model, prompts, 2);
        for (std::size_t i = 0; i < prompts.size(); ++i) {
            const std::vector<float> alone = last_logits(model, {prompts[i]}, 2).front();
            double spread = 0;
            for (float v : alone)
                spread = std::max(spread, std::fabs(static_cast<double>(v)));
            const double diff = max_difference(together[i], alone);
            QVERIFY2(diff <= 1e-5 * spread,
                     qPrintable(QStringLiteral("%1, sequence %2: %3 of %4").arg(preset).arg(i).arg(diff).arg(spread)));
        }
    }
}

void TestMoeForward::engines_share_the_expert_packs() {
    const Model model(qwen3moe_);
    const std::vector<Prompt> prompt{{1, {5, 9, 200, 31, 77, 400}}};
    std::vector<std::vector<float>> results(3);
    std::vector<std::thread> engines;
    for (std::size_t t = 0; t < results.size(); ++t)
        engines.emplace_back([&, t] { results[t] = last_logits(model, prompt, 1).front(); });
    for (std::thread& e : engines)
        e.join();
    for (const std::vector<float>& r : results)
        QVERIFY(r == results[0]);
    const ExpertPacks& packs = *model.cpu_weights().expert_packs;
    // Six tokens route to at most 6 x 8 of the 16 experts per layer; each
    // packed once, whichever engine asked first.
    QVERIFY(packs.packed_count() <= std::size_t{2} * 16 * 3);
    QVERIFY(packs.packed_count() >= std::size_t{2} * 8 * 3);
}

QTEST_GUILESS_MAIN(TestMoeForward)
#include "test_moe_forward.moc"

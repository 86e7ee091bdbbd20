// The forward pass against independent implementations: llama2.c's run.c
// greedy generations of stories260K, and llama.cpp's logits of tiny-kq
// (real K-quant blocks) at every position.
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/runtime/teacher_forcing.h"
#include "jsonl.h"
#include "support/test_models.h"

using namespace kvscope;
using namespace kvscope::test;

class TestGeneration : public QObject {
    Q_OBJECT
private slots:
    void reproduces_run_c_greedy_data();
    void reproduces_run_c_greedy();
    void matches_llama_cpp_logits_data();
    void matches_llama_cpp_logits();
    void follows_llama_cpp_on_quantized_files_data();
    void follows_llama_cpp_on_quantized_files();
    void block_size_does_not_change_tokens();
    void context_overflow_is_an_error();
};

void TestGeneration::reproduces_run_c_greedy_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("kv_dtype");
    QTest::newRow("f32 model, f32 KV") << "stories260K-f32.gguf" << int(KvDtype::F32);
    QTest::newRow("f16 model, f32 KV") << "stories260K-f16.gguf" << int(KvDtype::F32);
    QTest::newRow("f32 model, f16 KV") << "stories260K-f32.gguf" << int(KvDtype::F16);
}

void TestGeneration::reproduces_run_c_greedy() {
    QFETCH(QString, file);
    QFETCH(int, kv_dtype);
    KVSCOPE_REQUIRE_MODEL(path, "stories260K.reference.jsonl");
    const auto model = std::make_shared<const Model>(test_model_path(file).toStdString());
    const auto rows = read_jsonl(path);
    QVERIFY(rows.size() >= 6);
    GenerateSetup setup;
    setup.kv_dtype = static_cast<KvDtype>(kv_dtype);
    const std::optional<QString> mismatch = first_reference_mismatch(model, rows, setup);
    QVERIFY2(!mismatch, qPrintable(QStringLiteral("prompt '%1' generates other tokens").arg(mismatch.value_or(QString()))));
}

void TestGeneration::matches_llama_cpp_logits_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<double>("max_mean");
    QTest::addColumn<double>("max_abs");
    // F32: the same math in float. Position 0 (attention over one token is
    // the identity) agrees to 1e-4; later positions drift by up to ~0.007
    // because llama.cpp's CPU attention rounds Q and its running sums to f16
    // (flash-attention path with an f16 cache), which we do not imitate.
    QTest::newRow("F32") << "tiny-kq-f32.gguf" << 1e-3 << 1e-2;
    // Quantized: both sides quantize activations to 8 bits per block, with
    // their own rounding and summation order.
    QTest::newRow("Q8_0") << "tiny-kq-q8_0.gguf" << 0.05 << 0.3;
    QTest::newRow("Q6_K") << "tiny-kq-q6_k.gguf" << 0.05 << 0.3;
    QTest::newRow("Q4_K_M") << "tiny-kq-q4_k_m.gguf" << 0.05 << 0.3;
}

void TestGeneration::matches_llama_cpp_logits() {
    QFETCH(QString, file);
    QFETCH(double, max_mean);
    QFETCH(double, max_abs);
    KVSCOPE_REQUIRE_MODEL(path, "tiny-kq.llamacpp.jsonl");
    QJsonObject row;
    for (const QJsonObject& r : read_jsonl(path))
        if (r["model"].toString() == file)
            row = r;
    QVERIFY2(!row.isEmpty(), qPrintable(file));
    const Model model(test_model_path(file).toStdString());
    const auto tokens = ids(row["teacher_forced_token_ids"]);
    const std::size_t vocab = model.config().vocab_size;
    // llama.cpp keeps its KV cache in f16 by default, and so do we here.
    const std::vector<float> ours = teacher_forced_logits(model, tokens, KvDtype::F16);
    const QJsonArray theirs = row["logits"].toArray();
    QCOMPARE(static_cast<std::size_t>(theirs.size()), tokens.size());
    double sum = 0, worst = 0, worst_at_0 = 0;
    int argmax_checked = 0;
    for (std::size_t p = 0; p < tokens.size(); ++p) {
        const QJsonArray ref = theirs[static_cast<qsizetype>(p)].toArray();
        QCOMPARE(static_cast<std::size_t>(ref.size()), vocab);
        std::vector<double> r(vocab);
        for (std::size_t i = 0; i < vocab; ++i) {
            r[i] = ref[static_cast<qsizetype>(i)].toDouble();
            const double d = std::abs(ours[p * vocab + i] - r[i]);
            sum += d;
            worst = std::max(worst, d);
            if (p == 0)
                worst_at_0 = std::max(worst_at_0, d);
        }
        // Where llama.cpp's best token leads by more than 0.3, ours agrees.
        std::vector<double> sorted = r;
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        if (sorted[0] - sorted[1] > 0.3) {
            const auto* row_ours = ours.data() + p * vocab;
            QCOMPARE(std::max_element(row_ours, row_ours + vocab) - row_ours,
                     std::max_element(r.begin(), r.end()) - r.begin());
            ++argmax_checked;
        }
    }
    const double mean = sum / static_cast<double>(tokens.size() * vocab);
    qInfo("%s: mean |dlogit| %.5f, max %.5f (%.5f at position 0), argmax checked at %d of %zu positions",
          qPrintable(file), mean, worst, worst_at_0, argmax_checked, tokens.size());
    if (file == "tiny-kq-f32.gguf")
        QVERIFY2(worst_at_0 < 1e-4 + 5e-5, qPrintable(QString::number(worst_at_0)));
    // llama.cpp printed 5 significant digits.
    QVERIFY2(mean <= max_mean, qPrintable(QString::number(mean)));
    QVERIFY2(worst <= max_abs + 5e-4, qPrintable(QString::number(worst)));
}

void TestGeneration::follows_llama_cpp_on_quantized_files_data() {
    QTest::addColumn<QString>("file");
    for (const char* f : {"stories260K-q8_0.gguf", "stories260K-q6_k.gguf", "stories260K-q4_k_m.gguf",
                          "stories260K-q4_0.gguf"})
        QTest::newRow(f) << f;
}

// Greedy decoding amplifies any difference once two tokens are close: each
// generation must follow llama.cpp's to the end, or part from it only at a
// near-tie, where our own logits put llama.cpp's token within kNearTie of
// ours. Two engines that add a quantized product in another order or round
// one input code differently break such ties either way, and the change
// grows through the layers: llama.cpp's own batch and one-token paths
// disagree on 3.6% of top-1 tokens on the Q4_0 models of tests/data/llamacpp.
// The widest parting here is stories260K-q4_0's, 0.086 apart.
void TestGeneration::follows_llama_cpp_on_quantized_files() {
    constexpr float kNearTie = 0.1f;
    QFETCH(QString, file);
    KVSCOPE_REQUIRE_MODEL(path, "stories260K.llamacpp.jsonl");
    const auto model = std::make_shared<const Model>(test_model_path(file).toStdString());
    int identical = 0, rows = 0;
    std::size_t common_prefix = 0, total = 0;
    for (const QJsonObject& row : read_jsonl(path)) {
        if (row["model"].toString() != file)
            continue;
        const auto prompt = ids(row["prompt_token_ids"]);
        const auto expected = ids(row["generated_token_ids"]);
        const auto got = generate_alone(model, prompt, static_cast<std::uint32_t>(expected.size()));
        const auto diverge = static_cast<std::size_t>(std::mismatch(got.begin(), got.end(), expected.begin()).first -
                                                      got.begin());
        common_prefix += diverge;
        total += expected.size();
        identical += got == expected;
        ++rows;
        if (diverge == got.size())
            continue;
        // Our logits where the two part: the prompt and the shared tokens.
        std::vector<TokenId> context = prompt;
        context.insert(context.end(), got.begin(), got.begin() + static_cast<std::ptrdiff_t>(diverge));
        const std::vector<float> logits = teacher_forced_logits(*model, context, KvDtype::F16);
        const float* last = logits.data() + logits.size() - model->config().vocab_size;
        const float margin = last[got[diverge]] - last[expected[diverge]];
        qInfo("%s: parts from llama.cpp at token %zu, our logits %.4f apart", qPrintable(file), diverge, margin);
        QVERIFY2(margin <= kNearTie, qPrintable(QString("parts at token %1 without a near-tie").arg(diverge)));
    }
    qInfo("%s: %d of %d generations identical to llama.cpp's; %zu of %zu tokens before the first divergence",
          qPrintable(file), identical, rows, common_prefix, total);
    QVERIFY(rows == 6);
}

void TestGeneration::block_size_does_not_change_tokens() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto model = std::make_shared<const Model>(path.toStdString());
    const std::vector<TokenId> prompt{1, 403, 407, 261, 378};
    GenerateSetup setup;
    setup.kv_dtype = KvDtype::F32;
    setup.block_size = 1;
    const auto one = generate_alone(model, prompt, 40, setup);
    setup.block_size = 7;
    QCOMPARE(generate_alone(model, prompt, 40, setup), one);
    setup.block_size = 32;
    QCOMPARE(generate_alone(model, prompt, 40, setup), one);
}

void TestGeneration::context_overflow_is_an_error() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    const auto model = std::make_shared<const Model>(path.toStdString());
    const std::vector<TokenId> long_prompt(510, 300);
    try {
        generate_alone(model, long_prompt, 10);
        QFAIL("a prompt past the context must be refused");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("exceeds the model's context of 512"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(Error, generate_alone(model, std::vector<TokenId>{}, 10));
}

QTEST_APPLESS_MAIN(TestGeneration)
#include "test_generation.moc"

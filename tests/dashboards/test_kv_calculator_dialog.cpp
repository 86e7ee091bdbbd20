// The KV calculator dialog shows kvscope-cli calc's numbers: the same
// questions asked of the CLI (--json) and of the dialog's widgets give the
// same bytes, ratios and sequence counts for every KV dtype.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>

#include <cmath>
#include <QSpinBox>

#include "app/cli_runner.h"
#include "engine/kv/kv_dtype.h"
#include "engine/presets/device_presets.h"
#include "support/test_models.h"
#include "ui/settings/kv_calculator_dialog.h"

using namespace kvscope;
using namespace kvscope::ui;
using Column = KvCalculatorDialog::Column;
using KindColumn = KvCalculatorDialog::KindColumn;

namespace {

void setCombo(KvCalculatorDialog& d, const char* name, const QString& text) {
    auto* box = d.findChild<QComboBox*>(QLatin1String(name));
    QVERIFY(box);
    const int index = box->findText(text);
    QVERIFY2(index >= 0, qPrintable(text));
    box->setCurrentIndex(index);
}

void setSpin(KvCalculatorDialog& d, const char* name, int value) {
    auto* box = d.findChild<QSpinBox*>(QLatin1String(name));
    QVERIFY(box);
    box->setValue(value);
}

// The kinds table of the dialog against the CLI's "kinds" of one dtype.
void compareKinds(const KvCalculatorDialog& dialog, const QJsonObject& expected) {
    const QJsonArray kinds = expected["kinds"].toArray();
    QCOMPARE(dialog.kindRows(), static_cast<int>(kinds.size()));
    for (int k = 0; k < dialog.kindRows(); ++k) {
        const QJsonObject kind = kinds[k].toObject();
        QCOMPARE(dialog.kindText(k, KindColumn::kKind), kind["kind"].toString());
        QCOMPARE(*dialog.kindValue(k, KindColumn::kKindPerToken), kind["bytes_per_token"].toDouble());
        QCOMPARE(*dialog.kindValue(k, KindColumn::kKindBlocks), kind["blocks_per_sequence"].toDouble());
        QCOMPARE(*dialog.kindValue(k, KindColumn::kKindPerSequence), kind["bytes_per_sequence"].toDouble());
    }
}

// Every dtype row of the dialog against the CLI's "by_dtype" object; the
// kinds table against the highlighted dtype's kinds where it is shown.
void compareWithCli(const KvCalculatorDialog& dialog, const QStringList& args) {
    const test::CliResult cli = test::run_cli(QStringList{QStringLiteral("calc")} + args + QStringList{"--json"});
    QVERIFY2(cli.exit_code == 0, cli.err.constData());
    const QJsonObject json = cli.json();
    const QJsonObject byDtype = json["by_dtype"].toObject();
    const auto& answers = dialog.result().answers;
    QCOMPARE(byDtype.size(), static_cast<qsizetype>(answers.size()));
    QVERIFY(dialog.errorText().isEmpty());
    for (std::size_t i = 0; i < answers.size(); ++i) {
        const int row = static_cast<int>(i);
        const std::string_view name = to_string(answers[i].dtype);
        const QJsonObject expected = byDtype[QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()))].toObject();
        QVERIFY(!expected.isEmpty());
        QCOMPARE(*dialog.cellValue(row, Column::kPerToken), expected["bytes_per_token"].toDouble());
        QCOMPARE(*dialog.cellValue(row, Column::kPerSequence), expected["bytes_per_sequence"].toDouble());
        QCOMPARE(*dialog.cellValue(row, Column::kTotal), expected["total_bytes"].toDouble());
        QCOMPARE(*dialog.cellValue(row, Column::kWhole), expected["whole_bytes_per_sequence"].toDouble());
        if (expected.contains("sequences_that_fit"))
            QCOMPARE(*dialog.cellValue(row, Column::kFit), expected["sequences_that_fit"].toDouble());
        else
            QVERIFY(!dialog.cellValue(row, Column::kFit));
        QVERIFY(!dialog.cellText(row, Column::kTotal).isEmpty());
    }
    if (json.contains("gpu"))
        QCOMPARE(static_cast<double>(dialog.result().question.weight_bytes), json["gpu"]["weight_bytes"].toDouble());
    if (dialog.kindRows() > 0)
        compareKinds(dialog, json); // the CLI's top level is its --kv-dtype, the dialog's highlighted one
}

} // namespace

class TestKvCalculatorDialog : public QObject {
    Q_OBJECT
private slots:
    void preset_without_a_gpu();
    void preset_on_a_gpu_preset();
    void custom_gpu_memory_and_weight_format();
    void loaded_model_counts_its_file_weights();
    void a_gpu_without_model_size_is_an_error_not_a_crash();
    void opens_on_the_engines_dtype_and_block_size();
    void gpu_memory_field_follows_the_gpu();
    void calc_and_perplexity_agree_on_bytes_per_token();
    void window_groups_by_kind_as_the_cli_counts_them();
    void swa_full_and_chunk_as_the_cli_options();
    void latent_models_answer_in_float_dtypes();
    void mixture_of_experts_presets_with_their_windows();
};

void TestKvCalculatorDialog::preset_without_a_gpu() {
    KvCalculatorDialog dialog;
    QVERIFY(dialog.selectPreset(QStringLiteral("llama-2-7b")));
    setSpin(dialog, "tokens", 3000);
    setSpin(dialog, "sequences", 3);
    setSpin(dialog, "blockSize", 32);
    compareWithCli(dialog, {"--preset", "llama-2-7b", "--tokens", "3000", "--seqs", "3", "--block-size", "32"});
    // f16: 32 layers x 32 KV heads x 128 x 2 (K, V) x 2 bytes = 512 KiB per token.
    QCOMPARE(*dialog.cellValue(1, Column::kPerToken), 524288.0);
}

void TestKvCalculatorDialog::preset_on_a_gpu_preset() {
    KvCalculatorDialog dialog;
    QVERIFY(dialog.selectPreset(QStringLiteral("llama-3-8b")));
    setSpin(dialog, "tokens", 8192);
    setSpin(dialog, "sequences", 4);
    setCombo(dialog, "gpu", QStringLiteral("h100-80gb"));
    const QStringList args{"--preset", "llama-3-8b", "--tokens", "8192", "--seqs", "4", "--gpu", "h100-80gb"};
    compareWithCli(dialog, args);
    QVERIFY(*dialog.cellValue(0, Column::kFit) > 0);
    // The text too: the CLI's table line of each dtype holds the dialog's sizes.
    const test::CliResult table = test::run_cli(QStringList{QStringLiteral("calc")} + args);
    QCOMPARE(table.exit_code, 0);
    const QStringList lines = QString::fromUtf8(table.out).split(QLatin1Char('\n'));
    const auto dtypes = all_kv_dtypes();
    for (std::size_t i = 0; i < dtypes.size(); ++i) {
        const int row = static_cast<int>(i);
        const QString name = dialog.cellText(row, Column::kDtype);
        const auto line = std::find_if(lines.begin(), lines.end(),
                                       [&](const QString& l) { return l.startsWith(name + QLatin1Char(' ')); });
        QVERIFY2(line != lines.end(), qPrintable(name));
        for (Column c : {Column::kPerToken, Column::kPerSequence, Column::kTotal, Column::kVsF16, Column::kFit})
            QVERIFY2(line->contains(dialog.cellText(row, c).remove(QStringLiteral("×"))),
                     qPrintable(*line + QStringLiteral(" lacks ") + dialog.cellText(row, c)));
    }
}

void TestKvCalculatorDialog::custom_gpu_memory_and_weight_format() {
    KvCalculatorDialog dialog;
    QVERIFY(dialog.selectPreset(QStringLiteral("mistral-7b")));
    setSpin(dialog, "tokens", 16000);
    setCombo(dialog, "gpu", QStringLiteral("custom memory"));
    dialog.findChild<QDoubleSpinBox*>(QStringLiteral("gpuGib"))->setValue(24);
    dialog.findChild<QDoubleSpinBox*>(QStringLiteral("gpuUtil"))->setValue(0.85);
    setCombo(dialog, "weights", QStringLiteral("q4_k"));
    compareWithCli(dialog, {"--preset", "mistral-7b", "--tokens", "16000", "--gpu-mem-gib", "24", "--gpu-util",
                            "0.85", "--weights", "q4_k"});
}

void TestKvCalculatorDialog::loaded_model_counts_its_file_weights() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    KvCalculatorDialog dialog;
    dialog.setLoadedModel(calc_model_from_file(path.toStdString()));
    QCOMPARE(dialog.inputs().model.file_weight_bytes.has_value(), true);
    setSpin(dialog, "sequences", 5);
    setCombo(dialog, "gpu", QStringLiteral("rtx-4090-24gb"));
    QCOMPARE(QString::fromStdString(dialog.result().weights), QStringLiteral("as in the file"));
    // The tokens default to the model's context, as the CLI's --tokens does.
    compareWithCli(dialog, {"--model", path, "--seqs", "5", "--gpu", "rtx-4090-24gb"});
}

void TestKvCalculatorDialog::a_gpu_without_model_size_is_an_error_not_a_crash() {
    KvCalculatorDialog dialog;
    CalcModel custom{.name = "custom", .kv = {4, 2, 64}, .context = 1024};
    dialog.setLoadedModel(custom);
    setCombo(dialog, "gpu", QStringLiteral("a100-40gb"));
    QVERIFY(!dialog.errorText().isEmpty());
    QVERIFY(dialog.result().answers.empty());
    setCombo(dialog, "gpu", QStringLiteral("none"));
    QVERIFY(dialog.errorText().isEmpty());
    QCOMPARE(dialog.result().answers.size(), all_kv_dtypes().size());
}

void TestKvCalculatorDialog::opens_on_the_engines_dtype_and_block_size() {
    KvCalculatorDialog dialog;
    dialog.selectPreset(QStringLiteral("llama-2-7b"));
    dialog.setEngineSettings(KvDtype::Int4Kivi, 32);
    QCOMPARE(dialog.inputs().block_size, 32u);
    QCOMPARE(dialog.findChild<QComboBox*>(QStringLiteral("dtype"))->currentText(), QStringLiteral("int4-kivi"));
    compareWithCli(dialog, {"--preset", "llama-2-7b", "--block-size", "32", "--kv-dtype", "int4-kivi"});
}

void TestKvCalculatorDialog::gpu_memory_field_follows_the_gpu() {
    KvCalculatorDialog dialog;
    auto* memory = dialog.findChild<QDoubleSpinBox*>(QStringLiteral("gpuGib"));
    QVERIFY(memory);
    QVERIFY(!memory->isEnabled());
    QCOMPARE(memory->text(), QStringLiteral("no GPU"));
    setCombo(dialog, "gpu", QStringLiteral("h100-80gb"));
    QVERIFY(!memory->isEnabled());
    QCOMPARE(memory->value(), std::round(81559.0 / 1024 * 100) / 100); // the preset's, not a stale 24 GiB
    QCOMPARE(dialog.inputs().device->memory_bytes, find_device_preset("h100-80gb").memory_bytes);
    setCombo(dialog, "gpu", QStringLiteral("custom memory"));
    QVERIFY(memory->isEnabled());
    memory->setValue(40);
    QCOMPARE(dialog.inputs().device->memory_bytes, 40ull << 30);
    setCombo(dialog, "gpu", QStringLiteral("none"));
    QCOMPARE(memory->text(), QStringLiteral("no GPU"));
}

// `calc` and `perplexity` print the same bytes per token for every dtype
// they share, KIVI included (its f16 tail is per sequence, not per token).
void TestKvCalculatorDialog::calc_and_perplexity_agree_on_bytes_per_token() {
    KVSCOPE_REQUIRE_MODEL(path, "stories260K-f32.gguf");
    QTemporaryDir dir;
    const QString text = dir.filePath(QStringLiteral("sample.txt"));
    QVERIFY(QFile::copy(QStringLiteral(":/kvscope/sample_text.txt"), text));
    const test::CliResult calc = test::run_cli({"calc", "--model", path, "--json"});
    QVERIFY2(calc.exit_code == 0, calc.err.constData());
    const test::CliResult ppl = test::run_cli({"perplexity", "--model", path, "--text-file", text, "--ctx", "128",
                                               "--kv-dtype", "int4-kivi,int2-kivi,fp8-e4m3,int8", "--json"});
    QVERIFY2(ppl.exit_code == 0, ppl.err.constData());
    const QJsonObject byDtype = calc.json()["by_dtype"].toObject();
    const QJsonArray rows = ppl.json()["rows"].toArray();
    QCOMPARE(rows.size(), 5); // f32 and the four asked for
    for (const QJsonValue& row : rows) {
        const QString dtype = row["kv_dtype"].toString();
        QCOMPARE(row["bytes_per_token"].toDouble(), byDtype[dtype]["bytes_per_token"].toDouble());
    }
    QCOMPARE(byDtype["int4-kivi"]["bytes_per_token"].toDouble(), 280.0);
}

// gemma3-27b, a calculator-only preset: its full and window kinds, and the
// sequence kept whole, as `calc --preset gemma3-27b` gives them.
void TestKvCalculatorDialog::window_groups_by_kind_as_the_cli_counts_them() {
    KvCalculatorDialog dialog;
    QVERIFY(dialog.selectPreset(QStringLiteral("gemma3-27b")));
    QVERIFY(dialog.findChild<QComboBox*>(QStringLiteral("model"))->currentText().contains(QStringLiteral("calculator only")));
    setSpin(dialog, "tokens", 131072);
    setCombo(dialog, "gpu", QStringLiteral("h200-141gb"));
    compareWithCli(dialog, {"--preset", "gemma3-27b", "--tokens", "131072", "--gpu", "h200-141gb"});
    QCOMPARE(dialog.kindRows(), 2);
    QCOMPARE(dialog.kindText(1, KindColumn::kKind), QStringLiteral("sliding window 1024, 52 layers"));
    QCOMPARE(*dialog.cellValue(1, Column::kPerSequence), 11436687360.0); // test_cli_calc's hand computation
    QVERIFY(*dialog.cellValue(1, Column::kSaved) > 6.0);
    // A model without windows shows no kinds.
    QVERIFY(dialog.selectPreset(QStringLiteral("llama-3-8b")));
    QCOMPARE(dialog.kindRows(), 0);
}

void TestKvCalculatorDialog::swa_full_and_chunk_as_the_cli_options() {
    KvCalculatorDialog dialog;
    QVERIFY(dialog.selectPreset(QStringLiteral("gpt-oss-20b")));
    setSpin(dialog, "tokens", 65536);
    setSpin(dialog, "chunk", 2048);
    compareWithCli(dialog, {"--preset", "gpt-oss-20b", "--tokens", "65536", "--chunk", "2048"});
    auto* swaFull = dialog.findChild<QCheckBox*>(QStringLiteral("swaFull"));
    QVERIFY(swaFull && swaFull->isEnabled());
    swaFull->setChecked(true);
    compareWithCli(dialog, {"--preset", "gpt-oss-20b", "--tokens", "65536", "--chunk", "2048", "--swa-full"});
    QCOMPARE(*dialog.cellValue(1, Column::kPerSequence), *dialog.cellValue(1, Column::kWhole));
    QVERIFY(dialog.selectPreset(QStringLiteral("llama-2-7b")));
    QVERIFY(!swaFull->isEnabled()); // nothing to keep whole
}

void TestKvCalculatorDialog::latent_models_answer_in_float_dtypes() {
    KvCalculatorDialog dialog;
    QVERIFY(dialog.selectPreset(QStringLiteral("deepseek-v3")));
    setSpin(dialog, "tokens", 32768);
    QCOMPARE(dialog.result().answers.size(), std::size_t{3});
    compareWithCli(dialog, {"--preset", "deepseek-v3", "--tokens", "32768"});
    QCOMPARE(dialog.kindText(0, KindColumn::kKind), QStringLiteral("latent 512 + 64, 61 layers"));
    QCOMPARE(*dialog.cellValue(1, Column::kPerToken), 61.0 * (512 + 64) * 2);
    // int8 highlighted: a latent cache has none, the kinds show f16.
    setCombo(dialog, "dtype", QStringLiteral("int8"));
    QVERIFY(dialog.errorText().isEmpty());
    QCOMPARE(*dialog.kindValue(0, KindColumn::kKindPerToken), 61.0 * (512 + 64) * 2);
}

// gpt-oss-20b and Qwen3-30B-A3B are model presets (kvscope makes and runs
// them), listed as such: gpt-oss-20b's 128-token window layers apart from
// its full-attention ones, Qwen3-30B-A3B global on every layer.
void TestKvCalculatorDialog::mixture_of_experts_presets_with_their_windows() {
    KvCalculatorDialog dialog;
    auto* model = dialog.findChild<QComboBox*>(QStringLiteral("model"));
    QVERIFY(dialog.selectPreset(QStringLiteral("gpt-oss-20b")));
    QCOMPARE(model->currentText(), QStringLiteral("gpt-oss-20b"));
    QCOMPARE(dialog.kindRows(), 2);
    QCOMPARE(dialog.kindText(0, KindColumn::kKind), QStringLiteral("full attention, 12 layers"));
    QCOMPARE(dialog.kindText(1, KindColumn::kKind), QStringLiteral("sliding window 128, 12 layers"));
    QVERIFY(dialog.selectPreset(QStringLiteral("qwen3-30b-a3b")));
    QCOMPARE(model->currentText(), QStringLiteral("qwen3-30b-a3b"));
    QCOMPARE(dialog.kindRows(), 0);
    compareWithCli(dialog, {"--preset", "qwen3-30b-a3b", "--tokens", "40960"});
}

QTEST_MAIN(TestKvCalculatorDialog)
#include "test_kv_calculator_dialog.moc"

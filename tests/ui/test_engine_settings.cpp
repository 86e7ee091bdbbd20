// The engine settings form: the pool sized from a memory budget whose
// blocks show before Apply (the same kv_pool_blocks the engine uses), labels
// in words, Apply saying what it rebuilt, settings kept between runs.
#include <QtTest>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>

#include <nlohmann/json.hpp>

#include "ui/bridge/engine_controller.h"
#include "ui/settings/engine_settings_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

const ModelShape kStories{QStringLiteral("stories260K"), {5, 4, 8}, 512};
const ModelShape kLlama7b{QStringLiteral("llama-2-7b"), {32, 32, 128}, 4096};
// Two full-attention layers and four of a window of 8: a block holds two layers.
const ModelShape kWindowed{QStringLiteral("windowed"), {6, 1, 8}, 512, {0, 8, 8, 0, 8, 8}};

} // namespace

class TestEngineSettings : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); } // QSettings in a test location

    // The old default, 1,024 blocks whatever the model, was 10 MiB for
    // stories260K and 8 GiB for a 7B at f16.
    void default_pool_is_sized_for_the_model() {
        const EngineConfig defaults = EngineController::defaultConfig();
        const PoolPlan small = planPool(defaults, kStories);
        QCOMPARE(small.suggested_mib, 20.0);
        QCOMPARE(small.blocks, 64u * 32u); // every sequence at the full context
        const PoolPlan large = planPool(defaults, kLlama7b);
        QCOMPARE(large.blocks, 4096u / 16u); // one full context, 2 GiB
        QCOMPARE(large.mib, 2048.0);
    }

    void budget_shows_its_blocks_before_apply() {
        EngineSettingsPanel panel;
        panel.setConfig(EngineController::defaultConfig());
        QVERIFY(panel.poolPlanText().contains(QStringLiteral("Open a model")));
        panel.setModelShape(kStories);
        QVERIFY2(panel.poolPlanText().contains(QStringLiteral("2,048 blocks")), qPrintable(panel.poolPlanText()));
        auto* budget = panel.findChild<QDoubleSpinBox*>(QStringLiteral("kvBudget"));
        QVERIFY(budget);
        QCOMPARE(budget->text(), QStringLiteral("suggested: 20 MiB"));
        budget->setValue(1); // 1 MiB of 10 KiB blocks
        QVERIFY2(panel.poolPlanText().startsWith(QStringLiteral("102 blocks")), qPrintable(panel.poolPlanText()));
        QCOMPARE(panel.config().kv_budget_mib, 1.0);
        QCOMPARE(panel.config().num_blocks, 0u);
    }

    void labels_are_words_with_tooltips() {
        EngineSettingsPanel panel;
        auto* form = qobject_cast<QFormLayout*>(panel.layout());
        QVERIFY(form);
        int labelled = 0;
        for (int row = 0; row < form->rowCount(); ++row) {
            auto* item = form->itemAt(row, QFormLayout::LabelRole);
            auto* label = item ? qobject_cast<QLabel*>(item->widget()) : nullptr;
            if (!label)
                continue;
            ++labelled;
            QVERIFY2(!label->text().contains(QLatin1Char('_')), qPrintable(label->text()));
            QVERIFY2(!label->toolTip().isEmpty(), qPrintable(label->text()));
        }
        QCOMPARE(labelled, 12);
    }

    void swa_full_is_a_checkbox_round_trip() {
        EngineSettingsPanel panel;
        EngineConfig c = EngineController::defaultConfig();
        QVERIFY(!c.swa_full);
        panel.setConfig(c);
        auto* box = panel.findChild<QCheckBox*>(QStringLiteral("swaFull"));
        QVERIFY(box);
        QVERIFY(!box->isChecked());
        QVERIFY(box->toolTip().contains(QStringLiteral("swa_full in config files")));
        box->setChecked(true);
        QVERIFY(panel.config().swa_full);
        c.swa_full = true;
        panel.setConfig(c);
        QVERIFY(box->isChecked());
        const QStringList changes = configChanges(EngineController::defaultConfig(), c);
        QCOMPARE(changes, QStringList{QStringLiteral("Window layers keep all tokens off \u2192 on")});
    }

    // A block holds one KV cache group's layers: 2 of the 6 here, so a MiB
    // holds 1 MiB / (2 layers x K,V x 8 values x 2 bytes x 16 tokens) = 1,024
    // blocks, not the 341 blocks of all six layers.
    void windowed_models_blocks_hold_one_groups_layers() {
        EngineConfig c = EngineController::defaultConfig();
        c.kv_budget_mib = 1;
        c.block_size = 16;
        c.kv_dtype = KvDtype::F16;
        QCOMPARE(planPool(c, kWindowed).blocks, 1024u);
        const ModelShape dense{QStringLiteral("dense"), {6, 1, 8}, 512};
        QCOMPARE(planPool(c, dense).blocks, 341u);
        c.swa_full = true; // the same blocks, kept longer
        QCOMPARE(planPool(c, kWindowed).blocks, 1024u);
    }

    void apply_says_what_it_rebuilt() {
        EngineSettingsPanel panel;
        const EngineConfig before = EngineController::defaultConfig();
        panel.setConfig(before);
        panel.setModelShape(kStories);
        QSignalSpy apply(&panel, &EngineSettingsPanel::applyRequested);
        panel.findChild<QComboBox*>(QStringLiteral("kvDtype"))->setCurrentText(QStringLiteral("int8"));
        panel.findChild<QSpinBox*>(QStringLiteral("blockSize"))->setValue(32);
        panel.findChild<QPushButton*>(QStringLiteral("applyConfig"))->click();
        QCOMPARE(apply.size(), 1);
        const auto asked = apply.front().front().value<EngineConfig>();
        panel.setConfig(asked); // as the engine reports it applied
        const QString said = panel.applyResultText();
        QVERIFY2(said.contains(QStringLiteral("KV cache format f16 → int8")), qPrintable(said));
        QVERIFY2(said.contains(QStringLiteral("Tokens per block 16 → 32")), qPrintable(said));
        QVERIFY2(said.contains(panel.poolPlanText()), qPrintable(said));
        QCOMPARE(configChanges(before, before), QStringList());
        // The memory says its unit, the suggestion its word.
        EngineConfig sized = before;
        sized.kv_budget_mib = 0;
        EngineConfig eight = before;
        eight.kv_budget_mib = 8;
        QCOMPARE(configChanges(sized, eight), QStringList{QStringLiteral("KV cache memory suggested → 8 MiB")});
    }

    void applied_settings_persist() {
        const QString key = QStringLiteral("test/engineConfig");
        QSettings().remove(key);
        const EngineConfig fallback = EngineController::defaultConfig();
        QCOMPARE(to_json(EngineSettingsPanel::savedConfig(key, fallback)).dump(), to_json(fallback).dump());
        {
            EngineSettingsPanel panel;
            panel.persistAs(key);
            panel.setConfig(fallback);
            panel.findChild<QSpinBox*>(QStringLiteral("maxNumSeqs"))->setValue(12);
            panel.findChild<QDoubleSpinBox*>(QStringLiteral("kvBudget"))->setValue(48);
            QSignalSpy apply(&panel, &EngineSettingsPanel::applyRequested);
            panel.findChild<QPushButton*>(QStringLiteral("applyConfig"))->click();
            EngineConfig applied = apply.front().front().value<EngineConfig>();
            applied.model = "/models/x.gguf";
            panel.setConfig(applied);
        }
        // The next run.
        const EngineConfig saved = EngineSettingsPanel::savedConfig(key, fallback);
        QCOMPARE(saved.max_num_seqs, 12u);
        QCOMPARE(saved.kv_budget_mib, 48.0);
        QVERIFY(saved.model.empty()); // the model is opened, not a setting
        QSettings().setValue(key, QStringLiteral("{\"no_such_key\": 1}")); // another version's
        QCOMPARE(EngineSettingsPanel::savedConfig(key, fallback).max_num_seqs, fallback.max_num_seqs);
        QSettings().remove(key);
    }
};

QTEST_MAIN(TestEngineSettings)
#include "test_engine_settings.moc"

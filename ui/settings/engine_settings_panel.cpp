#include "ui/settings/engine_settings_panel.h"

#include <string>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace kvscope::ui {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The form's rows: each EngineConfig key it shows, in words, with why one
// would change it. Tooltips add the key, the word config files use.
struct Field {
    const char* key;
    const char* label;
    const char* tip;
};

const Field kFields[] = {
    {"backend", QT_TRANSLATE_NOOP("EngineSettings", "Runs on"),
     QT_TRANSLATE_NOOP("EngineSettings", "Where the forward pass and the KV pool run. auto: the GPU when this build "
                                         "has CUDA and a device answers, else the CPU.")},
    {"kv_dtype", QT_TRANSLATE_NOOP("EngineSettings", "KV cache format"),
     QT_TRANSLATE_NOOP("EngineSettings", "The number format K and V are stored in. Narrower formats hold more tokens "
                                         "in the same memory and cost some accuracy (the KV quantization dock "
                                         "measures how much).")},
    {"block_size", QT_TRANSLATE_NOOP("EngineSettings", "Tokens per block"),
     QT_TRANSLATE_NOOP("EngineSettings", "Token slots in one KV block, the unit the pool hands out. Larger blocks "
                                         "waste more of each sequence's last block.")},
    {"kv_budget_mib", QT_TRANSLATE_NOOP("EngineSettings", "KV cache memory"),
     QT_TRANSLATE_NOOP("EngineSettings", "Memory for the KV pool: it sets the number of blocks, shown below before "
                                         "you apply. The suggestion gives every sequence the model's full context, "
                                         "up to 256 MiB, and at least one full context.")},
    {"num_blocks", QT_TRANSLATE_NOOP("EngineSettings", "Exact block count"),
     QT_TRANSLATE_NOOP("EngineSettings", "Overrides the memory: the pool gets exactly this many blocks.")},
    {"allocation", QT_TRANSLATE_NOOP("EngineSettings", "Allocation"),
     QT_TRANSLATE_NOOP("EngineSettings", "paged: blocks anywhere in the pool, taken as tokens arrive (vLLM). "
                                         "contiguous: each request reserves prompt + max tokens as one run of "
                                         "blocks up front (before vLLM).")},
    {"preemption", QT_TRANSLATE_NOOP("EngineSettings", "When blocks run out"),
     QT_TRANSLATE_NOOP("EngineSettings", "What happens to the most recently admitted sequence when the pool is "
                                         "full: swap its blocks to host memory, or drop them and recompute it "
                                         "later.")},
    {"prefix_caching", QT_TRANSLATE_NOOP("EngineSettings", "Reuse shared prompt prefixes"),
     QT_TRANSLATE_NOOP("EngineSettings", "Requests that start with the same tokens share those blocks (the prefix "
                                         "cache).")},
    {"swa_full", QT_TRANSLATE_NOOP("EngineSettings", "Window layers keep all tokens"),
     QT_TRANSLATE_NOOP("EngineSettings", "Sliding-window layers keep every token, as full-attention layers do "
                                         "(llama.cpp's --swa-full), instead of giving back the blocks their window "
                                         "has left behind. The replies are the same (those tokens are masked); "
                                         "only the memory differs: for Compare A/B. No effect on a model without "
                                         "sliding windows.")},
    {"max_num_seqs", QT_TRANSLATE_NOOP("EngineSettings", "Sequences at once"),
     QT_TRANSLATE_NOOP("EngineSettings", "The most sequences one engine step runs together; the rest wait.")},
    {"max_num_batched_tokens", QT_TRANSLATE_NOOP("EngineSettings", "Tokens per step"),
     QT_TRANSLATE_NOOP("EngineSettings", "The most tokens one engine step computes; longer prompts are prefilled "
                                         "in chunks of this size.")},
    {"threads", QT_TRANSLATE_NOOP("EngineSettings", "CPU threads"),
     QT_TRANSLATE_NOOP("EngineSettings", "Threads for the CPU kernels.")},
};

QString label(const Field& f) { return QCoreApplication::translate("EngineSettings", f.label); }

QString tip(const Field& f) {
    return QCoreApplication::translate("EngineSettings", f.tip) + QLatin1Char(' ') +
           QCoreApplication::translate("EngineSettings", "(%1 in config files)").arg(QLatin1String(f.key));
}

QString word(std::string_view text) { return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())); }

QSpinBox* spin(const char* name, int low, int high) {
    auto* box = new QSpinBox;
    box->setObjectName(QString::fromLatin1(name));
    box->setRange(low, high);
    return box;
}

QComboBox* combo(const char* name, const QStringList& items) {
    auto* box = new QComboBox;
    box->setObjectName(QString::fromLatin1(name));
    box->addItems(items);
    return box;
}

QStringList dtypeWords() {
    QStringList words;
    for (KvDtype d : all_kv_dtypes())
        words << word(to_string(d));
    return words;
}

// A setting's value as the form shows it.
QString valueText(const char* key, const nlohmann::ordered_json& v) {
    if (v.is_string())
        return QString::fromStdString(v.get<std::string>());
    if (v.is_boolean())
        return v.get<bool>() ? QObject::tr("on") : QObject::tr("off");
    const double number = v.get<double>();
    if (number == 0 && std::string_view(key) == "kv_budget_mib")
        return QObject::tr("suggested");
    if (number == 0 && std::string_view(key) == "num_blocks")
        return QObject::tr("from the memory");
    if (std::string_view(key) == "kv_budget_mib") // the form's spin box says MiB; so does the summary
        return QObject::tr("%1 MiB").arg(number);
    return QString::number(number);
}

QString planText(const PoolPlan& p) {
    const QLocale locale;
    return QObject::tr("%1 blocks × %2 tokens = %3 tokens, %4 MiB")
        .arg(locale.toString(p.blocks), locale.toString(p.block_size),
             locale.toString(static_cast<qulonglong>(p.blocks) * p.block_size))
        .arg(p.mib, 0, 'f', 1);
}

} // namespace

PoolPlan planPool(const EngineConfig& config, const ModelShape& model) {
    const KvGroups groups = model.layer_windows.empty()
                                ? KvGroups::full(model.kv.n_layers)
                                : KvGroups::from_windows(model.layer_windows, config.swa_full);
    const KvLayout layout(model.kv, config.kv_dtype, config.block_size, groups);
    PoolPlan p;
    p.blocks = kv_pool_blocks(config, layout, model.context);
    p.block_size = config.block_size;
    p.mib = kv_pool_bytes(config, layout, p.blocks) / kMiB;
    p.suggested_mib = suggested_kv_budget_mib(config, layout, model.context);
    return p;
}

QStringList configChanges(const EngineConfig& before, const EngineConfig& after) {
    const nlohmann::ordered_json a = to_json(before), b = to_json(after);
    QStringList changes;
    for (const Field& f : kFields)
        if (a.at(f.key) != b.at(f.key))
            changes << QObject::tr("%1 %2 → %3").arg(label(f), valueText(f.key, a.at(f.key)), valueText(f.key, b.at(f.key)));
    return changes;
}

EngineSettingsPanel::EngineSettingsPanel(QWidget* parent)
    : QWidget(parent),
      backend_(combo("backend", {word(to_string(Backend::Auto)), word(to_string(Backend::Cpu)),
                                  word(to_string(Backend::Cuda))})),
      kvDtype_(combo("kvDtype", dtypeWords())),
      blockSize_(spin("blockSize", 1, 1024)),
      kvBudget_(new QDoubleSpinBox),
      numBlocks_(spin("numBlocks", 0, 1 << 24)),
      allocation_(combo("allocation", {word(to_string(AllocationMode::Paged)),
                                        word(to_string(AllocationMode::Contiguous))})),
      preemption_(combo("preemption", {word(to_string(PreemptionMode::Recompute)),
                                        word(to_string(PreemptionMode::Swap))})),
      prefixCaching_(new QCheckBox),
      swaFull_(new QCheckBox),
      maxNumSeqs_(spin("maxNumSeqs", 1, 4096)),
      maxBatchedTokens_(spin("maxBatchedTokens", 1, 1 << 20)),
      threads_(spin("threads", 0, 1024)),
      poolPlan_(new QLabel),
      applyResult_(new QLabel) {
    kvBudget_->setObjectName(QStringLiteral("kvBudget"));
    kvBudget_->setRange(0, 1 << 24);
    kvBudget_->setDecimals(1);
    kvBudget_->setSuffix(tr(" MiB"));
    kvBudget_->setSpecialValueText(tr("suggested for the model"));
    numBlocks_->setSpecialValueText(tr("as the memory holds"));
    threads_->setSpecialValueText(tr("one per core"));
    prefixCaching_->setObjectName(QStringLiteral("prefixCaching"));
    swaFull_->setObjectName(QStringLiteral("swaFull"));
    poolPlan_->setObjectName(QStringLiteral("poolPlan"));
    applyResult_->setObjectName(QStringLiteral("applyResult"));
    for (QLabel* l : {poolPlan_, applyResult_})
        l->setWordWrap(true);
    buildForm();
    for (QSpinBox* box : {blockSize_, numBlocks_, maxNumSeqs_})
        connect(box, &QSpinBox::valueChanged, this, &EngineSettingsPanel::showPoolPlan);
    connect(kvBudget_, &QDoubleSpinBox::valueChanged, this, &EngineSettingsPanel::showPoolPlan);
    connect(kvDtype_, &QComboBox::currentIndexChanged, this, &EngineSettingsPanel::showPoolPlan);
    showPoolPlan();
}

void EngineSettingsPanel::buildForm() {
    QWidget* editors[] = {backend_,    kvDtype_,       blockSize_, kvBudget_,   numBlocks_,        allocation_,
                          preemption_, prefixCaching_, swaFull_,   maxNumSeqs_, maxBatchedTokens_, threads_};
    static_assert(std::size(kFields) == std::size(editors));
    auto* form = new QFormLayout(this);
    // A narrow dock (1024x700) puts each label above its field rather than
    // asking to be scrolled sideways.
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    for (std::size_t i = 0; i < std::size(kFields); ++i) {
        editors[i]->setToolTip(tip(kFields[i]));
        auto* name = new QLabel(label(kFields[i]));
        name->setToolTip(tip(kFields[i]));
        form->addRow(name, editors[i]);
        if (editors[i] == numBlocks_)
            form->addRow(QString(), poolPlan_);
    }
    auto* apply = new QPushButton(tr("Apply"));
    apply->setObjectName(QStringLiteral("applyConfig"));
    apply->setToolTip(tr("A new engine with these settings: chats in progress stop"));
    form->addRow(QString(), apply);
    form->addRow(QString(), applyResult_);
    connect(apply, &QPushButton::clicked, this, &EngineSettingsPanel::requestApply);
}

void EngineSettingsPanel::requestApply() {
    applying_ = base_;
    applyResult_->setText(tr("Applying…"));
    emit applyRequested(config());
}

void EngineSettingsPanel::setConfig(const EngineConfig& config) {
    base_ = config;
    backend_->setCurrentText(word(to_string(config.backend)));
    kvDtype_->setCurrentText(word(to_string(config.kv_dtype)));
    blockSize_->setValue(static_cast<int>(config.block_size));
    kvBudget_->setValue(config.kv_budget_mib);
    numBlocks_->setValue(static_cast<int>(config.num_blocks));
    allocation_->setCurrentText(word(to_string(config.allocation)));
    preemption_->setCurrentText(word(to_string(config.preemption)));
    prefixCaching_->setChecked(config.prefix_caching);
    swaFull_->setChecked(config.swa_full);
    maxNumSeqs_->setValue(static_cast<int>(config.max_num_seqs));
    maxBatchedTokens_->setValue(static_cast<int>(config.max_num_batched_tokens));
    threads_->setValue(config.threads);
    if (!applying_)
        return;
    const QStringList changes = configChanges(*applying_, config);
    applying_.reset();
    if (!settingsKey_.isEmpty()) {
        EngineConfig kept = config;
        kept.model.clear(); // the model is what the user opens, not a setting
        QSettings().setValue(settingsKey_, QString::fromStdString(to_json(kept).dump()));
    }
    const QString what = changes.isEmpty() ? tr("Rebuilt the engine with the same settings.")
                                           : tr("Rebuilt the engine: %1.").arg(changes.join(QStringLiteral("; ")));
    applyResult_->setText(model_ ? tr("%1 Pool: %2. Chats in progress were stopped.").arg(what, poolPlan_->text())
                                 : tr("%1 A model opened next uses them.").arg(what));
}

EngineConfig EngineSettingsPanel::config() const {
    EngineConfig c = base_;
    c.backend = parse_backend(backend_->currentText().toStdString());
    c.kv_dtype = parse_kv_dtype(kvDtype_->currentText().toStdString());
    c.block_size = static_cast<std::uint32_t>(blockSize_->value());
    c.kv_budget_mib = kvBudget_->value();
    c.num_blocks = static_cast<std::uint32_t>(numBlocks_->value());
    c.allocation = parse_allocation_mode(allocation_->currentText().toStdString());
    c.preemption = parse_preemption_mode(preemption_->currentText().toStdString());
    c.prefix_caching = prefixCaching_->isChecked();
    c.swa_full = swaFull_->isChecked();
    c.max_num_seqs = static_cast<std::uint32_t>(maxNumSeqs_->value());
    c.max_num_batched_tokens = static_cast<std::uint32_t>(maxBatchedTokens_->value());
    c.threads = threads_->value();
    return c;
}

void EngineSettingsPanel::setModelShape(const ModelShape& model) {
    model_ = model;
    showPoolPlan();
}

void EngineSettingsPanel::showPoolPlan() {
    if (!model_) {
        kvBudget_->setSpecialValueText(tr("suggested for the model"));
        poolPlan_->setText(tr("Open a model to see the blocks this holds."));
        return;
    }
    try {
        const PoolPlan plan = planPool(config(), *model_);
        kvBudget_->setSpecialValueText(tr("suggested: %1 MiB").arg(plan.suggested_mib, 0, 'f', 0));
        poolPlan_->setText(planText(plan));
    } catch (const Error& e) {
        poolPlan_->setText(QString::fromUtf8(e.what()));
    }
}

void EngineSettingsPanel::persistAs(const QString& key) { settingsKey_ = key; }

EngineConfig EngineSettingsPanel::savedConfig(const QString& key, const EngineConfig& fallback) {
    const QString json = QSettings().value(key).toString();
    if (json.isEmpty())
        return fallback;
    try {
        EngineConfig saved = engine_config_from_json(nlohmann::ordered_json::parse(json.toStdString()));
        saved.model = fallback.model;
        saved.scheduling_policy = fallback.scheduling_policy; // the app's choice (chats first), not a setting
        return saved;
    } catch (const std::exception&) {
        return fallback; // written by another version: its defaults are the safe choice
    }
}

void EngineSettingsPanel::setApplyNote(const QString& note) {
    applying_.reset();
    applyResult_->setText(note);
}

QString EngineSettingsPanel::poolPlanText() const { return poolPlan_->text(); }

QString EngineSettingsPanel::applyResultText() const { return applyResult_->text(); }

} // namespace kvscope::ui

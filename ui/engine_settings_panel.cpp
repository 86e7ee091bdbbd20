#include "ui/engine_settings_panel.h"

#include <string>

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QPushButton>
#include <QSpinBox>

namespace kvscope::ui {
namespace {

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

} // namespace

EngineSettingsPanel::EngineSettingsPanel(QWidget* parent)
    : QWidget(parent),
      backend_(combo("backend", {word(to_string(Backend::Auto)), word(to_string(Backend::Cpu)),
                                  word(to_string(Backend::Cuda))})),
      kvDtype_(combo("kvDtype", dtypeWords())),
      blockSize_(spin("blockSize", 1, 1024)),
      numBlocks_(spin("numBlocks", 1, 1 << 24)),
      allocation_(combo("allocation", {word(to_string(AllocationMode::Paged)),
                                        word(to_string(AllocationMode::Contiguous))})),
      preemption_(combo("preemption", {word(to_string(PreemptionMode::Recompute)),
                                        word(to_string(PreemptionMode::Swap))})),
      prefixCaching_(new QCheckBox(tr("prefix caching"))),
      maxNumSeqs_(spin("maxNumSeqs", 1, 4096)),
      maxBatchedTokens_(spin("maxBatchedTokens", 1, 1 << 20)),
      threads_(spin("threads", 0, 1024)) {
    prefixCaching_->setObjectName(QStringLiteral("prefixCaching"));
    threads_->setSpecialValueText(tr("one per core"));
    auto* apply = new QPushButton(tr("Apply"));
    apply->setObjectName(QStringLiteral("applyConfig"));
    apply->setToolTip(tr("A new engine with these settings: chats in progress stop"));
    backend_->setToolTip(tr("auto: the GPU when this build has CUDA and a device answers, else the CPU"));
    auto* form = new QFormLayout(this);
    form->addRow(QStringLiteral("backend"), backend_);
    form->addRow(QStringLiteral("kv_dtype"), kvDtype_);
    form->addRow(QStringLiteral("block_size"), blockSize_);
    form->addRow(QStringLiteral("num_blocks"), numBlocks_);
    form->addRow(QStringLiteral("allocation"), allocation_);
    form->addRow(QStringLiteral("preemption"), preemption_);
    form->addRow(QString(), prefixCaching_);
    form->addRow(QStringLiteral("max_num_seqs"), maxNumSeqs_);
    form->addRow(QStringLiteral("max_num_batched_tokens"), maxBatchedTokens_);
    form->addRow(QStringLiteral("threads"), threads_);
    form->addRow(QString(), apply);
    connect(apply, &QPushButton::clicked, this, [this] { emit applyRequested(config()); });
}

void EngineSettingsPanel::setConfig(const EngineConfig& config) {
    base_ = config;
    backend_->setCurrentText(word(to_string(config.backend)));
    kvDtype_->setCurrentText(word(to_string(config.kv_dtype)));
    blockSize_->setValue(static_cast<int>(config.block_size));
    numBlocks_->setValue(static_cast<int>(config.num_blocks));
    allocation_->setCurrentText(word(to_string(config.allocation)));
    preemption_->setCurrentText(word(to_string(config.preemption)));
    prefixCaching_->setChecked(config.prefix_caching);
    maxNumSeqs_->setValue(static_cast<int>(config.max_num_seqs));
    maxBatchedTokens_->setValue(static_cast<int>(config.max_num_batched_tokens));
    threads_->setValue(config.threads);
}

EngineConfig EngineSettingsPanel::config() const {
    EngineConfig c = base_;
    c.backend = parse_backend(backend_->currentText().toStdString());
    c.kv_dtype = parse_kv_dtype(kvDtype_->currentText().toStdString());
    c.block_size = static_cast<std::uint32_t>(blockSize_->value());
    c.num_blocks = static_cast<std::uint32_t>(numBlocks_->value());
    c.allocation = parse_allocation_mode(allocation_->currentText().toStdString());
    c.preemption = parse_preemption_mode(preemption_->currentText().toStdString());
    c.prefix_caching = prefixCaching_->isChecked();
    c.max_num_seqs = static_cast<std::uint32_t>(maxNumSeqs_->value());
    c.max_num_batched_tokens = static_cast<std::uint32_t>(maxBatchedTokens_->value());
    c.threads = threads_->value();
    return c;
}

} // namespace kvscope::ui

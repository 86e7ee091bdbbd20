#include "ui/settings/kv_calculator_dialog.h"

#include <limits>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "engine/core/byte_text.h"
#include "engine/core/error.h"
#include "engine/presets/calc_presets.h"
#include "engine/presets/device_presets.h"
#include "ui/look/text_status.h"

namespace kvscope::ui {
namespace {

// Model combo data: -1 the loaded model, else the calc preset's index.
constexpr int kLoadedModel = -1;
// GPU combo data: -2 none, -1 custom memory, else the preset's index.
constexpr int kNoGpu = -2;
constexpr int kCustomGpu = -1;
// The weights combo's first entry: the file's own tensor bytes.
const QString kAsInFile = QStringLiteral("as in the file");

QString text(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

QString bytes(std::uint64_t n) { return QString::fromStdString(bytes_text(static_cast<double>(n))); }

QTableWidgetItem* cell(const QString& shown, std::optional<double> value, const QString& tip = {}) {
    auto* item = new QTableWidgetItem(shown);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (value)
        item->setData(Qt::UserRole, *value);
    item->setToolTip(tip);
    return item;
}

QTableWidgetItem* bytesCell(std::uint64_t n) {
    return cell(bytes(n), static_cast<double>(n), QObject::tr("%1 bytes").arg(n));
}

} // namespace

KvCalculatorDialog::KvCalculatorDialog(QWidget* parent)
    : QDialog(parent),
      model_(new QComboBox(this)),
      tokens_(new QSpinBox(this)),
      sequences_(new QSpinBox(this)),
      blockSize_(new QSpinBox(this)),
      chunk_(new QSpinBox(this)),
      swaFull_(new QCheckBox(tr("Keep the whole context in window layers (--swa-full)"), this)),
      dtype_(new QComboBox(this)),
      gpu_(new QComboBox(this)),
      gpuGib_(new QDoubleSpinBox(this)),
      weights_(new QComboBox(this)),
      gpuUtil_(new QDoubleSpinBox(this)),
      summary_(new QLabel(this)),
      error_(new QLabel(this)),
      table_(new QTableWidget(0, kColumns, this)),
      kinds_(new QTableWidget(0, kKindColumns, this)) {
    setWindowTitle(tr("KV cache calculator"));
    model_->setObjectName(QStringLiteral("model"));
    tokens_->setObjectName(QStringLiteral("tokens"));
    sequences_->setObjectName(QStringLiteral("sequences"));
    blockSize_->setObjectName(QStringLiteral("blockSize"));
    chunk_->setObjectName(QStringLiteral("chunk"));
    swaFull_->setObjectName(QStringLiteral("swaFull"));
    kinds_->setObjectName(QStringLiteral("kinds"));
    dtype_->setObjectName(QStringLiteral("dtype"));
    gpu_->setObjectName(QStringLiteral("gpu"));
    gpuGib_->setObjectName(QStringLiteral("gpuGib"));
    weights_->setObjectName(QStringLiteral("weights"));
    gpuUtil_->setObjectName(QStringLiteral("gpuUtil"));

    const auto presets = calc_presets();
    for (std::size_t i = 0; i < presets.size(); ++i) {
        const CalcPreset& p = presets[i];
        const QString name = QString::fromStdString(p.model.name);
        model_->addItem(p.calculator_only.empty() ? name : tr("%1 (calculator only)").arg(name), static_cast<int>(i));
        if (!p.calculator_only.empty())
            model_->setItemData(model_->count() - 1, QString::fromStdString(p.calculator_only), Qt::ToolTipRole);
    }
    tokens_->setRange(1, std::numeric_limits<int>::max());
    sequences_->setRange(1, 1 << 20);
    blockSize_->setRange(1, 1024);
    blockSize_->setValue(16);
    chunk_->setRange(1, 1 << 24);
    chunk_->setValue(512);
    chunk_->setToolTip(tr("Tokens computed in one step (vLLM's max_num_batched_tokens): a window layer holds "
                          "its window - 1 tokens and one chunk, in whole blocks, plus a block"));
    swaFull_->setToolTip(tr("Window layers keep every token, as llama.cpp's --swa-full: what the saving is "
                            "measured against"));
    for (KvDtype d : all_kv_dtypes())
        dtype_->addItem(text(to_string(d)), static_cast<int>(d));
    dtype_->setCurrentIndex(dtype_->findData(static_cast<int>(KvDtype::F16)));
    gpu_->addItem(tr("none"), kNoGpu);
    const auto devices = device_presets();
    for (std::size_t i = 0; i < devices.size(); ++i)
        gpu_->addItem(QString::fromStdString(devices[i].name), static_cast<int>(i));
    gpu_->addItem(tr("custom memory"), kCustomGpu);
    gpuGib_->setRange(0, 1 << 20);
    gpuGib_->setSpecialValueText(tr("no GPU")); // shown at 0: with GPU "none"
    gpuGib_->setSuffix(tr(" GiB"));
    for (GgmlType t : weight_formats())
        weights_->addItem(QString::fromStdString(weight_format_name(t)));
    weights_->setCurrentText(QStringLiteral("f16"));
    gpuUtil_->setRange(0.01, 1.0);
    gpuUtil_->setSingleStep(0.05);
    gpuUtil_->setValue(0.9);
    gpuUtil_->setToolTip(tr("Share of the GPU's memory the engine may use (vLLM's gpu_memory_utilization)"));
    summary_->setWordWrap(true);
    error_->setWordWrap(true);
    setTextStatus(*error_, TextStatus::Error);
    table_->setHorizontalHeaderLabels({tr("KV dtype"), tr("per token"), tr("per sequence"), tr("total"), tr("vs f16"),
                                       tr("all global"), tr("saved"), tr("sequences that fit")});
    table_->verticalHeader()->setVisible(false);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    kinds_->setHorizontalHeaderLabels({tr("kind of layer"), tr("per token"), tr("blocks"), tr("per sequence")});
    kinds_->verticalHeader()->setVisible(false);
    kinds_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    kinds_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    kinds_->horizontalHeader()->setSectionResizeMode(kKind, QHeaderView::ResizeToContents);
    kinds_->setMaximumHeight(96);

    auto* form = new QFormLayout;
    form->addRow(tr("Model"), model_);
    form->addRow(tr("Tokens per sequence"), tokens_);
    form->addRow(tr("Sequences"), sequences_);
    form->addRow(tr("Block size"), blockSize_);
    form->addRow(tr("Chunk (tokens a step)"), chunk_);
    form->addRow(QString(), swaFull_);
    form->addRow(tr("KV dtype"), dtype_);
    form->addRow(tr("GPU"), gpu_);
    form->addRow(tr("GPU memory"), gpuGib_);
    form->addRow(tr("Weights"), weights_);
    form->addRow(tr("GPU memory usable"), gpuUtil_);
    auto* close = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(close, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(summary_);
    layout->addWidget(error_);
    layout->addWidget(kinds_);
    layout->addWidget(table_, 1);
    layout->addWidget(close);
    resize(900, 800);

    connect(model_, &QComboBox::currentIndexChanged, this, &KvCalculatorDialog::modelChanged);
    for (QSpinBox* box : {tokens_, sequences_, blockSize_, chunk_})
        connect(box, &QSpinBox::valueChanged, this, &KvCalculatorDialog::recompute);
    for (QDoubleSpinBox* box : {gpuGib_, gpuUtil_})
        connect(box, &QDoubleSpinBox::valueChanged, this, &KvCalculatorDialog::recompute);
    for (QComboBox* box : {dtype_, gpu_, weights_})
        connect(box, &QComboBox::currentIndexChanged, this, &KvCalculatorDialog::recompute);
    connect(swaFull_, &QCheckBox::toggled, this, &KvCalculatorDialog::recompute);
    modelChanged();
}

void KvCalculatorDialog::setLoadedModel(const CalcModel& model) {
    loaded_ = model;
    const int at = model_->findData(kLoadedModel);
    const QString label = tr("%1 (loaded)").arg(QString::fromStdString(model.name));
    if (at >= 0)
        model_->setItemText(at, label);
    else
        model_->insertItem(0, label, kLoadedModel);
    if (model_->currentIndex() != 0)
        model_->setCurrentIndex(0); // modelChanged follows
    else
        modelChanged();
}

void KvCalculatorDialog::setEngineSettings(KvDtype dtype, std::uint32_t blockSize) {
    dtype_->setCurrentIndex(dtype_->findData(static_cast<int>(dtype)));
    blockSize_->setValue(static_cast<int>(blockSize));
}

bool KvCalculatorDialog::selectPreset(const QString& name) {
    const auto presets = calc_presets();
    for (std::size_t i = 0; i < presets.size(); ++i)
        if (QString::fromStdString(presets[i].model.name) == name) {
            model_->setCurrentIndex(model_->findData(static_cast<int>(i)));
            return true;
        }
    return false;
}

CalcInputs KvCalculatorDialog::inputs() const {
    CalcInputs in;
    const int m = model_->currentData().toInt();
    in.model = m == kLoadedModel && loaded_ ? *loaded_ : calc_presets()[static_cast<std::size_t>(m)].model;
    in.tokens_per_sequence = static_cast<std::uint64_t>(tokens_->value());
    in.sequences = static_cast<std::uint64_t>(sequences_->value());
    in.block_size = static_cast<std::uint32_t>(blockSize_->value());
    in.chunk_tokens = static_cast<std::uint64_t>(chunk_->value());
    in.keep_whole = swaFull_->isChecked();
    const int g = gpu_->currentData().toInt();
    if (g == kCustomGpu)
        in.device = CalcDevice{"custom", static_cast<std::uint64_t>(gpuGib_->value() * 1024 * 1024 * 1024)};
    else if (g != kNoGpu) {
        const DevicePreset& d = device_presets()[static_cast<std::size_t>(g)];
        in.device = CalcDevice{d.name, d.memory_bytes};
    }
    if (weights_->currentText() != kAsInFile)
        in.weights = weights_->currentText().toStdString();
    in.memory_fraction = gpuUtil_->value();
    return in;
}

void KvCalculatorDialog::modelChanged() {
    const bool fromFile = model_->currentData().toInt() == kLoadedModel && loaded_ && loaded_->file_weight_bytes;
    const int asInFile = weights_->findText(kAsInFile);
    if (fromFile && asInFile < 0) {
        weights_->insertItem(0, kAsInFile);
        weights_->setCurrentIndex(0);
    } else if (!fromFile && asInFile >= 0) {
        weights_->removeItem(asInFile);
        weights_->setCurrentText(QStringLiteral("f16"));
    }
    // A model's natural question is its own context length (the CLI's default).
    const QSignalBlocker quiet(tokens_);
    tokens_->setValue(static_cast<int>(std::min<std::uint64_t>(inputs().model.context,
                                                               std::numeric_limits<int>::max())));
    recompute();
}

// A preset GPU's memory shows in the (then greyed) memory field, so the
// field never contradicts the GPU chosen.
void KvCalculatorDialog::showGpuMemory() {
    constexpr double kCustomStartGib = 24;
    const int g = gpu_->currentData().toInt();
    gpuGib_->setEnabled(g == kCustomGpu);
    const QSignalBlocker quiet(gpuGib_);
    if (g == kNoGpu)
        gpuGib_->setValue(0);
    else if (g == kCustomGpu && gpuGib_->value() == 0)
        gpuGib_->setValue(kCustomStartGib);
    else if (g != kCustomGpu)
        gpuGib_->setValue(static_cast<double>(device_presets()[static_cast<std::size_t>(g)].memory_bytes) /
                          (1024.0 * 1024.0 * 1024.0));
}

void KvCalculatorDialog::recompute() {
    const int g = gpu_->currentData().toInt();
    showGpuMemory();
    weights_->setEnabled(g != kNoGpu);
    gpuUtil_->setEnabled(g != kNoGpu);
    error_->clear();
    const CalcInputs in = inputs();
    try {
        result_ = run_kv_calculator(in);
    } catch (const Error& e) {
        result_ = CalcResult{};
        error_->setText(QString::fromStdString(e.what()));
    }
    error_->setVisible(!error_->text().isEmpty());
    const bool windows = !in.model.layer_windows.empty();
    chunk_->setEnabled(windows);
    swaFull_->setEnabled(windows);
    const KvGeometry& kv = in.model.kv;
    const QString shape = in.model.latent ? tr("%1 layers × latent %2 + %3 (MLA, shared by %4 heads)")
                                                .arg(kv.n_layers)
                                                .arg(in.model.latent->latent_dim)
                                                .arg(in.model.latent->rope_dim)
                                                .arg(in.model.n_heads)
                                          : tr("%1 layers × %2 KV heads × head_dim %3")
                                                .arg(kv.n_layers)
                                                .arg(kv.n_kv_heads)
                                                .arg(kv.head_dim);
    QString summary = tr("%1: %2. %3 tokens × %4 sequences.")
                          .arg(QString::fromStdString(in.model.name), shape)
                          .arg(in.tokens_per_sequence)
                          .arg(in.sequences);
    summary += windowsText();
    if (in.device && !result_.answers.empty())
        summary += QLatin1Char(' ') + tr("On %1 (%2, %3% usable) next to %4 of weights (%5).")
                                          .arg(QString::fromStdString(in.device->name), bytes(in.device->memory_bytes))
                                          .arg(in.memory_fraction * 100, 0, 'f', 0)
                                          .arg(bytes(result_.question.weight_bytes),
                                               QString::fromStdString(result_.weights));
    summary_->setText(summary);
    fillTable();
    fillKinds();
}

// How the window layers are held: their cap and the groups' padding.
QString KvCalculatorDialog::windowsText() const {
    if (result_.answers.empty() || result_.question.layer_windows.empty())
        return {};
    const KvMemoryAnswer& a = result_.answers.front();
    std::uint32_t layers = 0, layerSlots = 0;
    for (const KvKindAnswer& k : a.kinds) {
        layers += k.n_layers;
        layerSlots += k.layer_slots;
    }
    QString text = QLatin1Char(' ') + (result_.question.keep_whole
                                           ? tr("Window layers keep every token (--swa-full).")
                                           : tr("Window layers hold their window − 1 + %1 tokens and a block at most.")
                                                 .arg(result_.question.chunk_tokens));
    text += QLatin1Char(' ') + tr("%1 layers a block, %2 groups").arg(a.layers_per_block).arg(a.groups);
    if (layerSlots > layers)
        text += tr(" (%1 padding layer slots counted)").arg(layerSlots - layers);
    return text + QLatin1Char('.');
}

void KvCalculatorDialog::fillTable() {
    table_->setRowCount(static_cast<int>(result_.answers.size()));
    double f16PerToken = 0;
    for (const KvMemoryAnswer& a : result_.answers)
        if (a.dtype == KvDtype::F16)
            f16PerToken = static_cast<double>(a.bytes_per_token);
    const auto highlighted = static_cast<KvDtype>(dtype_->currentData().toInt());
    for (int i = 0; i < table_->rowCount(); ++i) {
        const KvMemoryAnswer& a = result_.answers[static_cast<std::size_t>(i)];
        auto* name = new QTableWidgetItem(text(to_string(a.dtype)));
        QFont font = name->font();
        font.setBold(a.dtype == highlighted);
        name->setFont(font);
        table_->setItem(i, kDtype, name);
        table_->setItem(i, kPerToken, bytesCell(a.bytes_per_token));
        table_->setItem(i, kPerSequence, bytesCell(a.bytes_per_sequence));
        table_->setItem(i, kTotal, bytesCell(a.total_bytes));
        const double ratio = f16PerToken / static_cast<double>(a.bytes_per_token);
        table_->setItem(i, kVsF16, cell(QString::number(ratio, 'f', 2) + QStringLiteral("×"), ratio));
        table_->setItem(i, kWhole, bytesCell(a.whole_bytes_per_sequence));
        const double saved = a.bytes_per_sequence
                                 ? static_cast<double>(a.whole_bytes_per_sequence) / static_cast<double>(a.bytes_per_sequence)
                                 : 1.0;
        table_->setItem(i, kSaved, cell(QString::number(saved, 'f', 2) + QStringLiteral("×"), saved,
                                        tr("A sequence with every layer kept whole over this one")));
        table_->setItem(i, kFit, a.sequences_that_fit
                                      ? cell(QString::number(*a.sequences_that_fit),
                                             static_cast<double>(*a.sequences_that_fit),
                                             tr("KV budget %1; every layer whole: %2 fit")
                                                 .arg(bytes(*a.kv_budget_bytes))
                                                 .arg(*a.whole_sequences_that_fit))
                                      : cell(tr("—"), std::nullopt, tr("Choose a GPU to see how many fit")));
    }
    const bool frees = !result_.question.layer_windows.empty() && !result_.question.keep_whole;
    table_->setColumnHidden(kWhole, !frees);
    table_->setColumnHidden(kSaved, !frees);
}

void KvCalculatorDialog::fillKinds() {
    const auto highlighted = static_cast<KvDtype>(dtype_->currentData().toInt());
    const KvMemoryAnswer* shown = nullptr;
    for (const KvMemoryAnswer& a : result_.answers)
        if (a.dtype == highlighted || (!shown && a.dtype == KvDtype::F16))
            shown = &a;
    const bool visible = shown && (!result_.question.layer_windows.empty() || result_.question.latent);
    kinds_->setVisible(visible);
    kinds_->setRowCount(visible ? static_cast<int>(shown->kinds.size()) : 0);
    if (!visible)
        return;
    kinds_->horizontalHeaderItem(kKind)->setText(tr("kind of layer (%1)").arg(text(to_string(shown->dtype))));
    for (int i = 0; i < kinds_->rowCount(); ++i) {
        const KvKindAnswer& k = shown->kinds[static_cast<std::size_t>(i)];
        kinds_->setItem(i, kKind, new QTableWidgetItem(QString::fromStdString(k.title)));
        kinds_->setItem(i, kKindPerToken, bytesCell(k.bytes_per_token));
        kinds_->setItem(i, kKindBlocks, cell(QString::number(k.blocks_per_sequence),
                                             static_cast<double>(k.blocks_per_sequence),
                                             tr("%1 layer slots a block").arg(k.layer_slots)));
        kinds_->setItem(i, kKindPerSequence, bytesCell(k.bytes_per_sequence));
    }
}

QString KvCalculatorDialog::cellText(int row, Column column) const {
    const QTableWidgetItem* item = table_->item(row, column);
    return item ? item->text() : QString();
}

std::optional<double> KvCalculatorDialog::cellValue(int row, Column column) const {
    const QTableWidgetItem* item = table_->item(row, column);
    if (!item || !item->data(Qt::UserRole).isValid())
        return std::nullopt;
    return item->data(Qt::UserRole).toDouble();
}

int KvCalculatorDialog::kindRows() const { return kinds_->isHidden() ? 0 : kinds_->rowCount(); }

QString KvCalculatorDialog::kindText(int row, KindColumn column) const {
    const QTableWidgetItem* item = kinds_->item(row, column);
    return item ? item->text() : QString();
}

std::optional<double> KvCalculatorDialog::kindValue(int row, KindColumn column) const {
    const QTableWidgetItem* item = kinds_->item(row, column);
    if (!item || !item->data(Qt::UserRole).isValid())
        return std::nullopt;
    return item->data(Qt::UserRole).toDouble();
}

QString KvCalculatorDialog::errorText() const { return error_->text(); }

} // namespace kvscope::ui

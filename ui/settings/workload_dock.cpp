#include "ui/settings/workload_dock.h"

#include <limits>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/core/error.h"

namespace kvscope::ui {
namespace {

QSpinBox* spin(QWidget* parent, int lo, int hi, const QString& tip) {
    auto* box = new QSpinBox(parent);
    box->setRange(lo, hi);
    box->setToolTip(tip);
    return box;
}

QString distributionName(LengthDistribution d) {
    const std::string_view name = to_string(d);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

} // namespace

WorkloadDock::WorkloadDock(QWidget* parent)
    : QDockWidget(tr("Workload"), parent),
      requests_(spin(this, 1, 100000, tr("Requests (users) to send"))),
      distribution_(new QComboBox(this)),
      promptLen_(spin(this, 1, 1 << 20, tr("fixed: every prompt's length; uniform: the longest"))),
      outputLen_(spin(this, 1, 1 << 20, tr("fixed: every output's length; uniform: the longest"))),
      minLen_(spin(this, 1, 1 << 20, tr("Shortest prompt and output (uniform, sharegpt)"))),
      maxTotal_(spin(this, 3, 1 << 20, tr("Prompt + output never exceed this"))),
      arrivalRate_(new QDoubleSpinBox(this)),
      sharedPrefix_(spin(this, 0, 1 << 20, tr("Tokens of a common system prompt before every prompt: "
                                              "the prefix cache shares its blocks"))),
      samples_(spin(this, 1, 64, tr("Parallel samples per request (n): they share the prompt's blocks"))),
      seed_(spin(this, 0, std::numeric_limits<int>::max(), tr("Same seed, same workload"))),
      start_(new QPushButton(tr("Start"), this)),
      stop_(new QPushButton(tr("Stop"), this)),
      status_(new QLabel(this)) {
    setObjectName(QStringLiteral("WorkloadDock"));
    start_->setObjectName(QStringLiteral("start"));
    stop_->setObjectName(QStringLiteral("stop"));
    for (LengthDistribution d : {LengthDistribution::Fixed, LengthDistribution::Uniform, LengthDistribution::ShareGpt})
        distribution_->addItem(distributionName(d), static_cast<int>(d));
    distribution_->setToolTip(tr("sharegpt: long-tailed log-normal lengths like real conversations"));
    arrivalRate_->setRange(0, 1e6);
    arrivalRate_->setDecimals(2);
    arrivalRate_->setSpecialValueText(tr("all at once"));
    arrivalRate_->setSuffix(tr(" req/s"));
    arrivalRate_->setToolTip(tr("Poisson arrivals; 0 sends every request at once"));
    status_->setWordWrap(true);

    auto* body = new QWidget(this);
    auto* form = new QFormLayout;
    // A narrow dock (1024x700) puts each label above its field rather than
    // asking to be scrolled sideways.
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    form->addRow(tr("Requests"), requests_);
    form->addRow(tr("Lengths"), distribution_);
    form->addRow(tr("Prompt tokens"), promptLen_);
    form->addRow(tr("Output tokens"), outputLen_);
    form->addRow(tr("Min tokens"), minLen_);
    form->addRow(tr("Max prompt + output"), maxTotal_);
    form->addRow(tr("Arrival rate"), arrivalRate_);
    form->addRow(tr("Shared system prompt"), sharedPrefix_);
    form->addRow(tr("Samples (n)"), samples_);
    form->addRow(tr("Seed"), seed_);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(start_);
    buttons->addWidget(stop_);
    auto* layout = new QVBoxLayout(body);
    layout->addLayout(form);
    layout->addLayout(buttons);
    layout->addWidget(status_);
    layout->addStretch(1);
    setWidget(body);

    connect(start_, &QPushButton::clicked, this, &WorkloadDock::requestStart);
    connect(stop_, &QPushButton::clicked, this, &WorkloadDock::requestStop);
    setSpec(WorkloadSpec{});
    setWorkloadRunning(false);
}

WorkloadSpec WorkloadDock::spec() const {
    WorkloadSpec s;
    s.requests = static_cast<std::uint32_t>(requests_->value());
    s.distribution = static_cast<LengthDistribution>(distribution_->currentData().toInt());
    s.prompt_len = static_cast<std::uint32_t>(promptLen_->value());
    s.output_len = static_cast<std::uint32_t>(outputLen_->value());
    s.min_len = static_cast<std::uint32_t>(minLen_->value());
    s.max_total = static_cast<std::uint32_t>(maxTotal_->value());
    s.arrival_rate = arrivalRate_->value();
    s.shared_prefix = static_cast<std::uint32_t>(sharedPrefix_->value());
    s.n = static_cast<std::uint32_t>(samples_->value());
    s.vocab = vocab_;
    s.seed = static_cast<std::uint64_t>(seed_->value());
    return s;
}

void WorkloadDock::setSpec(const WorkloadSpec& s) {
    requests_->setValue(static_cast<int>(s.requests));
    distribution_->setCurrentIndex(distribution_->findData(static_cast<int>(s.distribution)));
    promptLen_->setValue(static_cast<int>(s.prompt_len));
    outputLen_->setValue(static_cast<int>(s.output_len));
    minLen_->setValue(static_cast<int>(s.min_len));
    maxTotal_->setValue(static_cast<int>(s.max_total));
    arrivalRate_->setValue(s.arrival_rate);
    sharedPrefix_->setValue(static_cast<int>(s.shared_prefix));
    samples_->setValue(static_cast<int>(s.n));
    seed_->setValue(static_cast<int>(std::min<std::uint64_t>(s.seed, std::numeric_limits<int>::max())));
    vocab_ = s.vocab;
}

void WorkloadDock::setModelLimits(std::uint32_t vocab, std::uint32_t context) {
    vocab_ = vocab;
    if (context > 0) {
        maxTotal_->setMaximum(static_cast<int>(std::min<std::uint32_t>(context, 1 << 20)));
        promptLen_->setMaximum(maxTotal_->maximum());
        outputLen_->setMaximum(maxTotal_->maximum());
    }
}

void WorkloadDock::setWorkloadRunning(bool running) {
    running_ = running;
    start_->setEnabled(!running);
    stop_->setEnabled(running);
    status_->setText(running ? tr("Running: watch the pool fill, fragment, preempt and recover.")
                             : tr("Idle."));
}

void WorkloadDock::requestStart() {
    const WorkloadSpec s = spec();
    try {
        make_workload(s); // the generator's own checks, before the engine sees the spec
    } catch (const Error& e) {
        status_->setText(tr("Cannot start: %1").arg(QString::fromStdString(e.what())));
        return;
    }
    status_->setText(tr("Starting %n request(s)…", nullptr, static_cast<int>(s.requests)));
    emit startWorkloadRequested(s);
}

void WorkloadDock::requestStop() { emit stopWorkloadRequested(); }

QString WorkloadDock::statusText() const { return status_->text(); }

} // namespace kvscope::ui

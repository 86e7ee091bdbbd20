#include "ui/blockmap/snapshot_replay_bar.h"

#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>

#include "ui/blockmap/snapshot_replay.h"

namespace kvscope::ui {
namespace {

QString statusText(const SnapshotReplay& replay) {
    const auto shown = replay.shown();
    if (!shown)
        return QObject::tr("no steps yet");
    if (replay.live())
        return QObject::tr("live \u00b7 step %1").arg(shown->step);
    const double behind_ms = (replay.at(replay.size() - 1)->time_s - shown->time_s) * 1000.0;
    return QObject::tr("step %1 \u00b7 %2 ms before live").arg(shown->step).arg(behind_ms, 0, 'f', 1);
}

} // namespace

SnapshotReplayBar::SnapshotReplayBar(QWidget* parent)
    : QWidget(parent),
      slider_(new QSlider(Qt::Horizontal)),
      live_(new QPushButton(tr("Live"))),
      status_(new QLabel) {
    slider_->setObjectName(QStringLiteral("replaySlider"));
    live_->setObjectName(QStringLiteral("replayLive"));
    status_->setObjectName(QStringLiteral("replayStatus"));
    const QString tip = tr("Replay: drag left to scrub back through the engine's recent steps (every step, even "
                           "those of a turn too fast to watch); the right end, or Live, follows the engine");
    slider_->setToolTip(tip);
    live_->setToolTip(tr("Show the engine as it is now"));
    status_->setWordWrap(true); // its own row: the bar stays narrow enough for a 1024 px window
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setVerticalSpacing(0);
    grid->addWidget(new QLabel(tr("Replay")), 0, 0);
    grid->addWidget(slider_, 0, 1);
    grid->addWidget(live_, 0, 2);
    grid->addWidget(status_, 1, 1, 1, 2);
    grid->setColumnStretch(1, 1);
    connect(slider_, &QSlider::valueChanged, this, &SnapshotReplayBar::picked);
    connect(live_, &QPushButton::clicked, this, &SnapshotReplayBar::liveRequested);
}

void SnapshotReplayBar::display(const SnapshotReplay& replay) {
    const QSignalBlocker quiet(slider_); // redrawing is not picking
    slider_->setRange(0, static_cast<int>(replay.size() > 0 ? replay.size() - 1 : 0));
    slider_->setValue(static_cast<int>(replay.position()));
    live_->setEnabled(!replay.live());
    status_->setText(statusText(replay));
}

QString SnapshotReplayBar::status() const { return status_->text(); }

} // namespace kvscope::ui

#include "ui/shell/latency_probe.h"

#include <spdlog/logger.h>

#include "engine/core/log.h"

namespace kvscope::ui {
namespace {

constexpr int kTicksPerUpdate = 1000 / UiLatencyProbe::kIntervalMs;
constexpr qint64 kNsPerMs = 1'000'000;
constexpr qint64 kLogIntervalNs = UiLatencyProbe::kLogIntervalS * 1000 * kNsPerMs;

} // namespace

UiLatencyProbe::UiLatencyProbe(QObject* parent) : QObject(parent) {
    // Re-armed at each tick, so that each sample is how late that one tick
    // came after it was due (a repeating timer would catch up and hide it).
    timer_.setSingleShot(true);
    timer_.setTimerType(Qt::PreciseTimer);
    timer_.setInterval(kIntervalMs);
    connect(&timer_, &QTimer::timeout, this, &UiLatencyProbe::tick);
    QTimer::singleShot(0, this, [this] {
        clock_.start();
        dueNs_ = kIntervalMs * kNsPerMs;
        timer_.start();
    });
}

UiLatencyProbe::~UiLatencyProbe() {
    const LatencySummary run = samples_.whole_run();
    if (run.samples > 0)
        logger("ui")->info("UI thread latency over this run ({} ticks of {} ms): worst {:.1f} ms, p95 {:.0f} ms, "
                           "median {:.0f} ms (budget {:.0f} ms)",
                           run.samples, kIntervalMs, run.worst_ms, run.p95_ms, run.median_ms, kBudgetMs);
}

void UiLatencyProbe::tick() {
    const qint64 now = clock_.nsecsElapsed();
    samples_.record(static_cast<double>(now) / 1e9, static_cast<double>(now - dueNs_) / kNsPerMs);
    dueNs_ = now + kIntervalMs * kNsPerMs;
    timer_.start();
    if (now - lastLogNs_ >= kLogIntervalNs)
        logInterval();
    if (++ticksSinceUpdate_ >= kTicksPerUpdate) {
        ticksSinceUpdate_ = 0;
        emit updated();
    }
}

void UiLatencyProbe::logInterval() {
    lastLogNs_ = clock_.nsecsElapsed();
    const LatencySummary last = samples_.recent(kLogIntervalS);
    logger("ui")->log(last.worst_ms > kBudgetMs ? spdlog::level::info : spdlog::level::debug,
                      "UI thread latency in the last {} s: worst {:.1f} ms, p95 {:.1f} ms (budget {:.0f} ms)",
                      kLogIntervalS, last.worst_ms, last.p95_ms, kBudgetMs);
}

QString UiLatencyProbe::describe() const {
    const LatencySummary minute = samples_.recent();
    return tr("Window response (how late a %1 ms timer on the UI thread fires), last minute: worst %2 ms, "
              "p95 %3 ms (budget %4 ms)")
        .arg(kIntervalMs)
        .arg(minute.worst_ms, 0, 'f', 0)
        .arg(minute.p95_ms, 0, 'f', 0)
        .arg(kBudgetMs, 0, 'f', 0);
}

} // namespace kvscope::ui

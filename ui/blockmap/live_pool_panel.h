#pragma once

#include <functional>
#include <memory>

#include <QWidget>

#include "engine/engine_snapshot.h"
#include "ui/blockmap/block_lanes.h"
#include "ui/blockmap/sequence_palette.h"
#include "ui/blockmap/snapshot_replay.h"
#include "ui/blockmap/window_fade.h"

class QLabel;

namespace kvscope::ui {

class BlockMapLegend;
class BlockMapWidget;
class BlockMapZoomBar;
class SnapshotReplayBar;

// The engine's KV pool: the block map (each chat in its tab's colour), its
// legend, a replay slider over the recent snapshots, the map's zoom bar and a line of figures
// ending with where the pool lives (Compare A/B's engines may differ there).
// Live, it shows the latest snapshot; scrubbed back, the picked one. With
// KV cache groups the figures go on per lane (kind of attention layer),
// and blocks freed by a sliding window stay marked for a moment, live (the
// mark fading as time passes) and in the replay (as it stood at that step).
// Behind another tab or dock its map keeps up but its words wait until it is
// shown again.
class LivePoolPanel : public QWidget {
    Q_OBJECT
public:
    // The palette for a snapshot being replayed (the app's chatPalette);
    // without one, a replayed snapshot gets the latest snapshot's palette.
    using PaletteMaker = std::function<SequencePalette(const EngineSnapshot&)>;

    explicit LivePoolPanel(QWidget* parent = nullptr);

    void setSnapshot(std::shared_ptr<const EngineSnapshot> snapshot, SequencePalette palette);
    // Snapshots of steps the engine ran between two published ones (see
    // EngineController::stepsRecorded), kept for the replay only.
    void addSteps(const SnapshotBatch& steps);
    // Forgets the kept snapshots and the painted one: the panel is about to
    // show another engine (a server's, or the local one again), whose steps
    // must not follow the old engine's on the slider.
    void clear();
    // What the panel says while it has no pool to show ("No model loaded";
    // Compare A/B's B: "B is not running"): in the figures line and on the map.
    // clear() keeps it.
    void setIdleText(const QString& text);
    void setPaletteMaker(PaletteMaker maker) { paletteMaker_ = std::move(maker); }

    BlockMapWidget* map() const { return map_; }
    BlockMapLegend* legend() const { return legend_; }
    SnapshotReplayBar* replayBar() const { return replayBar_; }
    BlockMapZoomBar* zoomBar() const { return zoomBar_; }
    const SnapshotReplay& replay() const { return replay_; }
    // Shows the index-th kept snapshot (0 = oldest); the newest goes live.
    void pick(int index);
    void goLive();
    QString figures() const;

protected:
    void showEvent(QShowEvent* event) override;

private:
    bool hiddenInWindow() const;
    void showShown();
    static QString wordFigures(const EngineSnapshot& shown, const std::vector<BlockLane>& lanes);

    BlockMapWidget* map_;
    BlockMapLegend* legend_;
    SnapshotReplayBar* replayBar_;
    BlockMapZoomBar* zoomBar_;
    QLabel* figures_;
    QString idleText_;
    bool stale_ = false; // a snapshot came while hidden: its words wait for showEvent
    SnapshotReplay replay_;
    SequencePalette livePalette_;
    WindowFade liveFade_; // every snapshot added, in order
    PaletteMaker paletteMaker_;
};

} // namespace kvscope::ui

// Not a test (timings are never asserted): what one snapshot costs each
// dashboard with the largest pool the app supports, 65,536 blocks held by
// 256 growing sequences of a real KvCacheManager. Prints median, p95 and max
// per panel. Run: QT_QPA_PLATFORM=offscreen build/tests/dashboards/bench_dashboards
#include <QApplication>
#include <QElapsedTimer>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "engine/kv/kv_cache_manager.h"
#include "ui/dashboards/fragmentation_panel.h"
#include "ui/dashboards/kv_quant_panel.h"
#include "ui/dashboards/throughput_panel.h"

using namespace kvscope;
using namespace kvscope::ui;

namespace {

constexpr SeqId kSequences = 256;
constexpr int kSnapshots = 700;

void report(const char* what, std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    std::printf("%-44s median %6.2f ms   p95 %6.2f ms   max %7.2f ms\n", what, ms[ms.size() / 2],
                ms[ms.size() * 95 / 100], ms.back());
}

// Milliseconds `work` takes, the queued replots it caused included.
double timed(const std::function<void()>& work) {
    QElapsedTimer t;
    t.start();
    work();
    QCoreApplication::processEvents();
    return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    KvCacheManager kv({KvLayout({1, 1, 2}, KvDtype::F16, 16), 65536});
    for (SeqId s = 1; s <= kSequences; ++s)
        kv.allocate(s, std::vector<TokenId>(37 * s % 2000 + 1, static_cast<TokenId>(s + 3)), 4000);

    auto history = std::make_shared<SnapshotHistory>();
    FragmentationPanel fragmentation(history);
    fragmentation.setCounterfactualVisible(true);
    ThroughputPanel throughput(history);
    KvQuantPanel quant;
    FragmentationPanel hidden; // a tabbed dock in the background
    for (QWidget* w : std::initializer_list<QWidget*>{&fragmentation, &throughput, &quant}) {
        w->resize(1200, 700);
        w->show();
    }
    std::vector<double> fragMs, throughputMs, quantMs, hiddenMs;
    for (int i = 0; i < kSnapshots; ++i) {
        for (SeqId s = 1; s <= kSequences; ++s)
            kv.append(s, 5);
        auto snap = std::make_shared<EngineSnapshot>();
        snap->step = static_cast<std::uint64_t>(i + 1);
        snap->time_s = i / 30.0;
        snap->pool = kv.snapshot();
        for (SeqId s = 1; s <= kSequences; ++s)
            snap->seqs.push_back({s, s, 0, SeqStatus::Running, kv.num_tokens(s), 0});
        fragMs.push_back(timed([&] { fragmentation.setSnapshot(snap); }));
        throughputMs.push_back(timed([&] { throughput.setSnapshot(snap); }));
        quantMs.push_back(timed([&] { quant.setSnapshot(snap); }));
        hiddenMs.push_back(timed([&] { hidden.setSnapshot(snap); }));
    }
    std::printf("%d snapshots of a 65536-block pool, %llu sequences, 1200x700 panels\n", kSnapshots,
                static_cast<unsigned long long>(kSequences));
    report("fragmentation (heatmap 600 x 256 + waste)", fragMs);
    report("throughput", throughputMs);
    report("KV quantization (refreshes every 250 ms)", quantMs);
    report("fragmentation, hidden", hiddenMs);
    return 0;
}

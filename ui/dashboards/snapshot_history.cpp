#include "ui/dashboards/snapshot_history.h"

#include <algorithm>
#include <functional>

#include <QIODevice>
#include <QString>
#include <QStringList>

#include "engine/kv/contiguous_reservation.h"

namespace kvscope::ui {
namespace {

// Each CSV column: its header and how to read it from an entry. Percentages
// are written as percentages, as the dashboards show them.
struct CsvColumn {
    const char* name;
    std::function<QString(const SnapshotFigures&)> value;
};

QString number(double v) { return QString::number(v, 'g', 10); }
QString count(std::uint64_t v) { return QString::number(v); }
QString percent(double share) { return QString::number(100.0 * share, 'f', 4); }

const std::vector<CsvColumn>& csvColumns() {
    static const std::vector<CsvColumn> columns{
        {"step", [](const SnapshotFigures& f) { return count(f.step); }},
        {"time_s", [](const SnapshotFigures& f) { return number(f.time_s); }},
        {"prompt_tokens_per_s", [](const SnapshotFigures& f) { return number(f.prompt_tokens_per_s); }},
        {"generation_tokens_per_s", [](const SnapshotFigures& f) { return number(f.generation_tokens_per_s); }},
        {"busy_s", [](const SnapshotFigures& f) { return number(f.busy_s); }},
        {"last_step_s", [](const SnapshotFigures& f) { return number(f.last_step_s); }},
        {"last_step_expert_s", [](const SnapshotFigures& f) { return number(f.last_step_expert_s); }},
        {"last_step_expert_pct",
         [](const SnapshotFigures& f) { return percent(expert_share_of_step(f.last_step_s, f.last_step_expert_s)); }},
        {"running", [](const SnapshotFigures& f) { return count(f.running); }},
        {"waiting", [](const SnapshotFigures& f) { return count(f.waiting); }},
        {"swapped", [](const SnapshotFigures& f) { return count(f.swapped); }},
        {"kv_block_occupancy_pct", [](const SnapshotFigures& f) { return percent(f.block_occupancy); }},
        {"kv_token_occupancy_pct", [](const SnapshotFigures& f) { return percent(f.token_occupancy); }},
        {"internal_waste_pct", [](const SnapshotFigures& f) { return percent(f.internal_waste); }},
        {"reserved_waste_pct", [](const SnapshotFigures& f) { return percent(f.reserved_waste); }},
        {"external_fragmentation_pct", [](const SnapshotFigures& f) { return percent(f.external_fragmentation); }},
        {"contiguous_internal_waste_pct",
         [](const SnapshotFigures& f) { return percent(f.contiguous_internal_waste); }},
        {"contiguous_reserved_waste_pct",
         [](const SnapshotFigures& f) { return percent(f.contiguous_reserved_waste); }},
        {"preemptions", [](const SnapshotFigures& f) { return count(f.preemptions); }},
        {"completed_requests", [](const SnapshotFigures& f) { return count(f.completed_requests); }},
        {"aborted_requests", [](const SnapshotFigures& f) { return count(f.aborted_requests); }},
        {"failed_requests", [](const SnapshotFigures& f) { return count(f.failed_requests); }},
        {"prompt_tokens", [](const SnapshotFigures& f) { return count(f.prompt_tokens); }},
        {"generated_tokens", [](const SnapshotFigures& f) { return count(f.generated_tokens); }},
        {"prefix_hit_rate_pct", [](const SnapshotFigures& f) { return percent(f.prefix_hit_rate); }},
        {"ttft_p50_ms", [](const SnapshotFigures& f) { return number(f.ttft.p50_ms); }},
        {"ttft_p95_ms", [](const SnapshotFigures& f) { return number(f.ttft.p95_ms); }},
        {"itl_p50_ms", [](const SnapshotFigures& f) { return number(f.itl.p50_ms); }},
        {"itl_p95_ms", [](const SnapshotFigures& f) { return number(f.itl.p95_ms); }},
    };
    return columns;
}

bool writeLine(QIODevice& device, const QStringList& cells) {
    const QByteArray line = (cells.join(',') + '\n').toUtf8();
    return device.write(line) == line.size();
}

} // namespace

SnapshotFigures figures_of(const EngineSnapshot& s) {
    SnapshotFigures f;
    f.step = s.step;
    f.time_s = s.time_s;
    f.prompt_tokens_per_s = s.prompt_tokens_per_s;
    f.generation_tokens_per_s = s.generation_tokens_per_s;
    f.busy_s = s.busy_s;
    f.last_step_s = s.last_step_s;
    f.last_step_expert_s = s.last_step_expert_s;
    f.running = s.running;
    f.waiting = s.waiting;
    f.swapped = s.swapped;
    if (s.pool) {
        const FragmentationStats& frag = s.pool->fragmentation;
        f.block_occupancy = frag.block_occupancy();
        f.token_occupancy = frag.token_occupancy();
        f.internal_waste = frag.internal_waste();
        f.reserved_waste = frag.reserved_waste();
        f.external_fragmentation = frag.external_fragmentation();
        const ContiguousCounterfactual c = contiguous_counterfactual(*s.pool);
        f.contiguous_internal_waste = c.internal_waste();
        f.contiguous_reserved_waste = c.reserved_waste();
    }
    f.preemptions = s.preemptions;
    f.completed_requests = s.completed_requests;
    f.aborted_requests = s.aborted_requests;
    f.failed_requests = s.failed_requests;
    f.prompt_tokens = s.prompt_tokens;
    f.generated_tokens = s.generated_tokens;
    f.prefix_hit_rate = s.prefix_hit_rate;
    f.ttft = s.ttft;
    f.itl = s.itl;
    return f;
}

double expert_share_of_step(double step_s, double expert_s) { return step_s > 0 ? expert_s / step_s : 0.0; }

SnapshotHistory::SnapshotHistory(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

bool SnapshotHistory::record(const EngineSnapshot& snapshot) {
    if (!entries_.empty()) {
        const SnapshotFigures& last = entries_.back();
        if (snapshot.time_s == last.time_s && snapshot.step == last.step)
            return false;
        if (snapshot.time_s < last.time_s)
            clear();
    }
    entries_.push_back(figures_of(snapshot));
    expert_steps_ = expert_steps_ || snapshot.last_step_expert_s > 0;
    if (entries_.size() > capacity_)
        entries_.pop_front();
    return true;
}

bool SnapshotHistory::writeCsv(QIODevice& device) const {
    QStringList header;
    for (const CsvColumn& c : csvColumns())
        header << QString::fromLatin1(c.name);
    if (!writeLine(device, header))
        return false;
    for (const SnapshotFigures& f : entries_) {
        QStringList row;
        for (const CsvColumn& c : csvColumns())
            row << c.value(f);
        if (!writeLine(device, row))
            return false;
    }
    return true;
}

} // namespace kvscope::ui

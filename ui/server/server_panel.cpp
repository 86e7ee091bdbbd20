#include "ui/server/server_panel.h"

#include <QDateTime>
#include <QEvent>
#include <QTimer>
#include <QGridLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "ui/server/prefix_cache_widget.h"
#include "ui/server/server_colours.h"
#include "ui/server/server_history_plot.h"
#include "ui/server/slot_map_widget.h"

namespace kvscope::ui {
namespace {

constexpr int kRankColumns = 3; // ranks side by side, then the next row

QString html(const std::string& text) { return QString::fromStdString(text).toHtmlEscaped(); }

// Figures as a two-column table: labels left, values right of them.
QString figuresHtml(const std::vector<FigureText>& rows) {
    QString table = QStringLiteral("<table cellspacing=\"2\">");
    for (const FigureText& row : rows)
        table += QStringLiteral("<tr><td>%1&nbsp;&nbsp;</td><td><b>%2</b></td></tr>")
                     .arg(html(row.label), html(row.value));
    return table + QStringLiteral("</table>");
}

QString bulletsHtml(const QString& heading, const std::vector<std::string>& lines) {
    if (lines.empty())
        return {};
    QString text = QStringLiteral("<b>%1</b><ul style=\"margin-left:-20px\">").arg(heading.toHtmlEscaped());
    for (const std::string& line : lines)
        text += QStringLiteral("<li>%1</li>").arg(html(line));
    return text + QStringLiteral("</ul>");
}

constexpr int kAgeTickMs = 1000; // the stale figures' age is said in whole seconds

QString figuresToolTip() {
    return QObject::tr("TTFT (server): the server's own histogram of the time from receiving a request to its first "
                       "token, p50 and p99 over the last minute, read from its /metrics as Prometheus' "
                       "histogram_quantile reads it. The Throughput dock's TTFT is the engine's: from a request's "
                       "arrival in the engine's queue to its first sampled token, every request since the engine "
                       "started.");
}

} // namespace

ServerPanel::ServerPanel(QWidget* parent)
    : QWidget(parent), ageTicker_(new QTimer(this)), layout_(new QVBoxLayout(this)),
      historyPlot_(new ServerHistoryPlot), slotMap_(new SlotMapWidget), ranks_(new QWidget) {
    setObjectName(QStringLiteral("serverPanel"));
    ageTicker_->setInterval(kAgeTickMs);
    connect(ageTicker_, &QTimer::timeout, this, &ServerPanel::tickAge);
    title_ = addLabel("serverTitle");
    // A font, not a style sheet: the heading's colour stays the palette's
    // text colour, whichever theme is applied (and when it changes).
    QFont heading = title_->font();
    heading.setBold(true);
    heading.setPointSize(14);
    title_->setFont(heading);
    model_ = addLabel("serverModel");
    freshness_ = addLabel("serverFreshness");
    stale_ = addLabel("serverStale");
    figures_ = addLabel("serverFigures");
    figures_->setToolTip(figuresToolTip());
    layout_->addWidget(historyPlot_);
    historyPlot_->hide();
    slotSummary_ = addLabel("slotSummary");
    layout_->addWidget(slotMap_);
    ranks_->setObjectName(QStringLiteral("serverRanks"));
    auto* grid = new QGridLayout(ranks_);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setHorizontalSpacing(24);
    layout_->addWidget(ranks_);
    cannotTell_ = addLabel("serverCannotTell");
    faults_ = addLabel("serverFaults");
    localOff_ = addLabel("localEngineOff");
    localOff_->setText(tr("Chat, engine settings, workloads and Compare A/B drive kvscope's own engine, so they are "
                          "off while this window watches a server. File > Disconnect brings them back."));
    localOff_->setEnabled(false); // the palette's dimmed text: a note, not data
    layout_->addStretch(1);
    setView({});
}

QLabel* ServerPanel::addLabel(const char* name) {
    auto* label = new QLabel;
    label->setObjectName(QString::fromLatin1(name));
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout_->addWidget(label);
    return label;
}

void ServerPanel::showSample(const attach::RemoteSample& sample) {
    if (sample.kind == attach::ServerKind::Kvscope || sample.link == attach::LinkState::Connecting) {
        history_.clear(); // a new connection starts with nothing; a kvscope server's history is its snapshots'
    } else if (history_.add(sample) || !history_.empty()) { // away, the time axis still moves on
        const double now_s = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
        historyPlot_->setHistory(history_, now_s - sample.time_s);
    }
    historyPlot_->setVisible(!history_.empty());
    sample_ = sample;
    sinceSample_.start();
    setView(server_view(sample));
    followAge();
}

// The age counts on only while the panel is shown: one left behind by a
// disconnect says nothing more (its staleChanged would grey the local
// engine's figures).
void ServerPanel::followAge() {
    if (view_.stale.empty() || !isVisible())
        ageTicker_->stop();
    else if (!ageTicker_->isActive())
        ageTicker_->start();
}

void ServerPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    followAge();
}

void ServerPanel::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    followAge();
}

void ServerPanel::tickAge() {
    if (sample_)
        setView(server_view(*sample_, static_cast<double>(sinceSample_.elapsed()) / 1000.0));
}

void ServerPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        setView(view_); // the link's dot takes the new palette's shade
}

void ServerPanel::setView(ServerView view) {
    const bool staleChanges = view.stale != view_.stale;
    view_ = std::move(view);
    if (staleChanges)
        emit staleChanged(QString::fromStdString(view_.stale));
    // The URL on a line of its own: wrapped after "http://" it reads badly.
    const std::string& t = view_.title;
    const bool endsWithUrl = !view_.url.empty() && t.ends_with(view_.url);
    title_->setText(endsWithUrl
                        ? html(t.substr(0, t.size() - view_.url.size())) + QStringLiteral("<br>") + html(view_.url)
                        : html(t));
    model_->setText(QString::fromStdString(view_.model));
    freshness_->setText(QStringLiteral("<span style=\"color:%1\">\u25CF</span> %2")
                            .arg(linkColour(view_.link, palette()).name(), html(view_.freshness)));
    stale_->setText(QString::fromStdString(view_.stale));
    stale_->setVisible(!view_.stale.empty());
    figures_->setText(figuresHtml(view_.figures));
    figures_->setVisible(!view_.figures.empty());
    figures_->setEnabled(view_.stale.empty()); // the palette's dimmed text: last figures, not live ones
    const bool llama = view_.kind == attach::ServerKind::LlamaCpp;
    slotSummary_->setText(QString::fromStdString(view_.slot_summary) +
                          tr("\nEach row is one slot's context (n_ctx): filled, the tokens it holds (grey: an idle "
                             "slot's kept prompt); pale, reserved but unused."));
    slotSummary_->setVisible(llama);
    slotMap_->setRows(view_.slot_rows);
    slotMap_->setVisible(llama && !view_.slot_rows.empty());
    showRanks();
    cannotTell_->setText(bulletsHtml(tr("What this server does not tell"), view_.cannot_tell));
    cannotTell_->setVisible(!view_.cannot_tell.empty());
    faults_->setText(bulletsHtml(tr("Recent faults"), view_.faults));
    faults_->setVisible(!view_.faults.empty());
}

// Each rank: a heading, its figures, and its prefix cache when its KV
// events are connected. Rebuilt only when the number of ranks changes.
void ServerPanel::showRanks() {
    auto* box = static_cast<QGridLayout*>(ranks_->layout());
    if (static_cast<std::size_t>(box->count()) != view_.ranks.size()) {
        while (QLayoutItem* item = box->takeAt(0)) {
            delete item->widget();
            delete item;
        }
        for (std::size_t i = 0; i < view_.ranks.size(); ++i) {
            auto* rank = new QWidget;
            auto* rows = new QVBoxLayout(rank);
            rows->setContentsMargins(0, 6, 0, 0);
            auto* text = new QLabel;
            text->setObjectName(QStringLiteral("rankFigures"));
            text->setWordWrap(true);
            rows->addWidget(text);
            rows->addWidget(new PrefixCacheWidget);
            rows->addStretch(1);
            const int at = static_cast<int>(i);
            box->addWidget(rank, at / kRankColumns, at % kRankColumns, Qt::AlignTop);
        }
    }
    for (std::size_t i = 0; i < view_.ranks.size(); ++i) {
        const RankView& r = view_.ranks[i];
        QWidget* rank = box->itemAt(static_cast<int>(i))->widget();
        auto* text = rank->findChild<QLabel*>(QStringLiteral("rankFigures"));
        auto* cache = rank->findChild<PrefixCacheWidget*>();
        QString body = QStringLiteral("<b>%1</b>").arg(html(r.title)) + figuresHtml(r.figures);
        if (r.prefix_cache)
            body += QStringLiteral("<i>%1</i>").arg(tr("Prefix cache (from KV events)")) +
                    figuresHtml(r.prefix_cache->figures);
        else
            body += QStringLiteral("<i>%1</i>").arg(html(r.note));
        text->setText(body);
        cache->setVisible(r.prefix_cache.has_value());
        cache->setChainLengths(r.prefix_cache ? r.prefix_cache->chain_lengths : std::vector<std::uint32_t>{});
    }
    ranks_->setVisible(!view_.ranks.empty());
    ranks_->setEnabled(view_.stale.empty()); // greyed with the server's figures
}

bool ServerPanel::figuresGreyed() const { return !figures_->isEnabled(); }

bool ServerPanel::isCountingAge() const { return ageTicker_->isActive(); }

std::vector<PrefixCacheWidget*> ServerPanel::prefixCaches() const {
    std::vector<PrefixCacheWidget*> caches;
    for (PrefixCacheWidget* cache : ranks_->findChildren<PrefixCacheWidget*>())
        if (!cache->isHidden())
            caches.push_back(cache);
    return caches;
}

QString ServerPanel::text(const QString& part) const {
    if (part == QLatin1String("ranks")) {
        QStringList texts;
        for (const QLabel* label : ranks_->findChildren<QLabel*>())
            texts << label->text();
        return texts.join('\n');
    }
    const QHash<QString, QLabel*> labels{{QStringLiteral("title"), title_},
                                         {QStringLiteral("model"), model_},
                                         {QStringLiteral("freshness"), freshness_},
                                         {QStringLiteral("figures"), figures_},
                                         {QStringLiteral("stale"), stale_},
                                         {QStringLiteral("slots"), slotSummary_},
                                         {QStringLiteral("cannotTell"), cannotTell_},
                                         {QStringLiteral("faults"), faults_},
                                         {QStringLiteral("localOff"), localOff_}};
    const QLabel* label = labels.value(part);
    return label ? label->text() : QString();
}

} // namespace kvscope::ui

#include "ui/shell/start_page.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include "engine/presets/model_presets.h"
#include "net/hub/hub_settings.h"
#include "ui/look/text_status.h"
#include "ui/settings/model_info_panel.h"
#include "ui/server/recent_servers.h"

namespace kvscope::ui {
namespace {

// The column's width: room for the notes' sentences without lines running
// across a 2560-pixel window.
constexpr int kColumnMaxWidth = 640;

QGroupBox* section(const QString& title, std::initializer_list<QWidget*> content, QWidget* action = nullptr) {
    auto* box = new QGroupBox(title);
    auto* layout = new QVBoxLayout(box);
    for (QWidget* widget : content)
        layout->addWidget(widget);
    if (action)
        layout->addWidget(action, 0, Qt::AlignLeft);
    return box;
}

QLabel* note(const QString& text) {
    auto* label = new QLabel(text);
    label->setWordWrap(true);
    return label;
}

// A short list of recent entries: six rows, then it scrolls.
void limitRows(QListWidget* list) {
    list->setMaximumHeight(6 * list->fontMetrics().lineSpacing() + 2 * list->frameWidth());
}

void showNoneYet(QListWidget* list) {
    auto* item = new QListWidgetItem(QObject::tr("(none yet)"), list);
    item->setFlags(Qt::NoItemFlags);
}

// Small chat models of families kvscope runs (engine/model/model_families.cpp),
// from the GGUF repositories llama.cpp's users pull them from, in the quant
// they pick for a model this small. Sizes are the file's, rounded.
struct Suggestion {
    const char* name;
    const char* reference; // ORG/NAME:QUANT
    const char* size;
};
constexpr Suggestion kSuggestions[] = {
    {"Qwen3 0.6B", "ggml-org/Qwen3-0.6B-GGUF:Q8_0", "640 MB"},
    {"Gemma 3 1B", "ggml-org/gemma-3-1b-it-GGUF:Q4_K_M", "810 MB"},
    {"SmolLM2 360M", "bartowski/SmolLM2-360M-Instruct-GGUF:Q8_0", "390 MB"},
    {"Llama 3.2 1B", "bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", "810 MB"},
};

// "0:42", "12:05", "1:02:05".
QString durationText(double seconds) {
    const auto s = static_cast<long long>(seconds + 0.5);
    if (s >= 3600)
        return QStringLiteral("%1:%2:%3")
            .arg(s / 3600)
            .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
            .arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

// "Qwen3-0.6B-Q8_0.gguf: 12.3 MiB of 639.0 MiB · 3.4 MiB/s · 2:55 left"
QString progressText(const DownloadProgress& p) {
    QString text = p.file;
    if (p.count > 1)
        text += QStringLiteral(" [%1/%2]").arg(p.index).arg(p.count);
    text += QStringLiteral(": ") + bytesText(static_cast<double>(p.done));
    if (p.total > 0)
        text += QObject::tr(" of %1").arg(bytesText(static_cast<double>(p.total)));
    if (p.bytesPerSecond > 0)
        text += QStringLiteral(" · %1/s").arg(bytesText(p.bytesPerSecond));
    if (p.secondsLeft >= 0 && p.done < p.total)
        text += QObject::tr(" · %1 left").arg(durationText(p.secondsLeft));
    return text;
}

// What went wrong, and what to do about it, before net/hub's own message
// (which names the repository, file or quants).
QString failureHeadline(hub::HubErrorKind kind) {
    using K = hub::HubErrorKind;
    switch (kind) {
    case K::BadReference: return QObject::tr("Type the model as ORG/NAME or ORG/NAME:QUANT, as on its hub page.");
    case K::NoSuchRepo: return QObject::tr("The hub has no such repository: check its name.");
    case K::Gated:
        return QObject::tr("This model is gated: accept its terms on its page on huggingface.co, set HF_TOKEN to "
                           "an access token of yours and start kvscope again.");
    case K::NoGguf: return QObject::tr("That repository holds no GGUF model: pick one whose name ends in -GGUF.");
    case K::NoSuchQuant: return QObject::tr("That repository has no such quantization; pick one of those it has.");
    case K::DiskFull:
        return QObject::tr("Not enough disk space for the model: free some, or point LLAMA_CACHE at another disk.");
    case K::ChecksumMismatch:
        return QObject::tr("The download did not match the hub's checksum and was not kept: try again.");
    case K::Network:
        return QObject::tr("The hub could not be reached: check the network (and https_proxy, or HF_ENDPOINT for a "
                           "mirror).");
    case K::Cancelled:
    case K::Http: break;
    }
    return QObject::tr("The download failed.");
}

// The runnable models in the hub cache; none when no cache folder can be
// named (no HOME) or read.
std::vector<hub::CachedGguf> cachedModels() {
    try {
        std::vector<hub::CachedGguf> models = hub::list_cached_models(hub::hub_cache_dir_from_environment());
        std::erase_if(models, [](const hub::CachedGguf& m) { return !m.runnable; });
        return models;
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace

StartPage::StartPage(QWidget* parent)
    : QWidget(parent),
      suggestions_(new QListWidget),
      repo_(new QLineEdit),
      download_(new QPushButton(tr("Download"))),
      progressRow_(new QWidget),
      progressBar_(new QProgressBar),
      status_(new QLabel),
      downloadError_(new QLabel),
      downloader_(new ModelDownloader(this)),
      recent_(new QListWidget),
      recentServers_(new QListWidget),
      preset_(new QComboBox) {
    auto* open = new QPushButton(tr("Open GGUF model..."));
    open->setObjectName(QStringLiteral("openModel"));
    open->setToolTip(tr("Open a GGUF file (Ctrl+O), or drop one on the window"));
    connect(open, &QPushButton::clicked, this, &StartPage::openFileRequested);

    recent_->setObjectName(QStringLiteral("recentFiles"));
    limitRows(recent_);
    connect(recent_, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { emit recentFileRequested(item->data(Qt::UserRole).toString()); });

    auto* connectServer = new QPushButton(tr("Connect to a server..."));
    connectServer->setObjectName(QStringLiteral("connectServer"));
    connectServer->setToolTip(tr("Watch a running kvscope, llama.cpp or vLLM server (File > Connect to Server...)"));
    connect(connectServer, &QPushButton::clicked, this, &StartPage::connectRequested);
    recentServers_->setObjectName(QStringLiteral("recentServers"));
    limitRows(recentServers_);
    connect(recentServers_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        const int row = recentServers_->row(item);
        if (row >= 0 && static_cast<std::size_t>(row) < servers_.size())
            emit recentServerRequested(servers_[static_cast<std::size_t>(row)]);
    });

    auto* playground = new QPushButton(tr("Open the allocator playground"));
    playground->setObjectName(QStringLiteral("openPlayground"));
    connect(playground, &QPushButton::clicked, this, &StartPage::playgroundRequested);

    preset_->setObjectName(QStringLiteral("syntheticPreset"));
    for (const ModelGeometry& g : model_presets())
        preset_->addItem(QStringLiteral("%1 (%2 parameters)")
                             .arg(QString::fromStdString(g.name), countText(static_cast<double>(g.parameters()))),
                         QString::fromStdString(g.name));
    auto* build = new QPushButton(tr("Build synthetic model"));
    build->setObjectName(QStringLiteral("buildSynthetic"));
    connect(build, &QPushButton::clicked, this,
            [this] { emit syntheticRequested(preset_->currentData().toString()); });
    QLabel* syntheticNote =
        note(tr("A model of a real shape with <b>random weights</b>: it <b>produces meaningless text</b>, but its "
                "KV cache, memory and speed are those of the real model. Built into a temporary file "
                "(Q4_0 weights) when you press the button; the large presets take minutes and gigabytes."));

    auto* column = new QWidget;
    column->setObjectName(QStringLiteral("startColumn"));
    column->setMaximumWidth(kColumnMaxWidth);
    auto* sections = new QVBoxLayout(column);
    sections->addWidget(note(tr("<h2>kvscope</h2>Chat with a model and watch its paged KV cache live.")));
    sections->addWidget(section(
        tr("Model"),
        {note(tr("A GGUF model: Llama (Mistral and SmolLM2 too), Qwen 2 and 3, Gemma 2 and 3, Phi-3, SmolLM3, "
                 "gpt-oss."))},
        open));
    sections->addWidget(buildDownloadSection());
    sections->addWidget(section(tr("Recent"), {recent_}));
    sections->addWidget(section(tr("Server"),
                                {note(tr("Watch the KV cache of a running kvscope, llama.cpp or vLLM server, "
                                         "live; nothing is loaded here.")),
                                 recentServers_},
                                connectServer));
    sections->addWidget(section(tr("Synthetic model"), {syntheticNote, preset_}, build));
    sections->addWidget(section(
        tr("Allocator playground"),
        {note(tr("Paged and contiguous allocation side by side, step by step, no model needed."))}, playground));

    // Centred in a large window; in a small one the page scrolls rather than
    // squeeze a section's text under the next.
    auto* centred = new QWidget;
    auto* grid = new QGridLayout(centred);
    grid->addWidget(column, 1, 1);
    grid->setRowStretch(0, 1);
    grid->setRowStretch(2, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 2); // up to its maximum width
    grid->setColumnStretch(2, 1);
    auto* scroll = new QScrollArea;
    scroll->setWidget(centred);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll);
    setRecentFiles({});
    setRecentServers({});
}

QWidget* StartPage::buildDownloadSection() {
    suggestions_->setObjectName(QStringLiteral("downloadSuggestions"));
    for (const Suggestion& s : kSuggestions) {
        auto* item = new QListWidgetItem(
            tr("%1 · %2 · %3").arg(QLatin1String(s.name), QLatin1String(s.reference), QLatin1String(s.size)),
            suggestions_);
        item->setData(Qt::UserRole, QLatin1String(s.reference));
        item->setToolTip(item->text());
    }
    // Four rows, each whole or cut in the middle in a narrow window, never a
    // horizontal scroll bar over the last one.
    suggestions_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    suggestions_->setTextElideMode(Qt::ElideMiddle);
    suggestions_->setMaximumHeight(static_cast<int>(std::size(kSuggestions)) * suggestions_->sizeHintForRow(0) +
                                   2 * suggestions_->frameWidth());
    connect(suggestions_, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        if (item)
            repo_->setText(item->data(Qt::UserRole).toString());
    });
    connect(suggestions_, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { startDownload(item->data(Qt::UserRole).toString()); });

    repo_->setObjectName(QStringLiteral("downloadRepo"));
    repo_->setPlaceholderText(tr("ORG/NAME[:QUANT], e.g. %1").arg(QLatin1String(kSuggestions[0].reference)));
    connect(repo_, &QLineEdit::returnPressed, this, [this] { startDownload(repo_->text()); });
    download_->setObjectName(QStringLiteral("downloadModel"));
    download_->setToolTip(tr("Download the model from the Hugging Face Hub and open it"));
    connect(download_, &QPushButton::clicked, this, [this] { startDownload(repo_->text()); });
    auto* field = new QWidget;
    auto* fieldLayout = new QHBoxLayout(field);
    fieldLayout->setContentsMargins(0, 0, 0, 0);
    fieldLayout->addWidget(repo_, 1);
    fieldLayout->addWidget(download_);

    progressRow_->setObjectName(QStringLiteral("downloadProgressRow"));
    progressBar_->setObjectName(QStringLiteral("downloadProgress"));
    progressBar_->setTextVisible(false);
    status_->setObjectName(QStringLiteral("downloadStatus"));
    status_->setWordWrap(true);
    auto* cancel = new QPushButton(tr("Cancel"));
    cancel->setObjectName(QStringLiteral("cancelDownload"));
    connect(cancel, &QPushButton::clicked, downloader_, &ModelDownloader::cancel);
    auto* progressLayout = new QGridLayout(progressRow_);
    progressLayout->setContentsMargins(0, 0, 0, 0);
    progressLayout->addWidget(progressBar_, 0, 0);
    progressLayout->addWidget(cancel, 0, 1);
    progressLayout->addWidget(status_, 1, 0, 1, 2);
    progressRow_->hide();

    downloadError_->setObjectName(QStringLiteral("downloadError"));
    downloadError_->setWordWrap(true);
    downloadError_->setTextFormat(Qt::PlainText); // the hub's message may hold '<'
    downloadError_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    setTextStatus(*downloadError_, TextStatus::Error);
    downloadError_->hide();

    connect(downloader_, &ModelDownloader::progress, this, &StartPage::showDownloadProgress);
    connect(downloader_, &ModelDownloader::finished, this, [this](const QString& path) {
        downloadEnded();
        status_->clear();
        emit modelDownloaded(path);
    });
    connect(downloader_, &ModelDownloader::failed, this, &StartPage::showDownloadFailure);
    connect(downloader_, &ModelDownloader::cancelled, this, &StartPage::showDownloadCancelled);

    return section(tr("Download a model"),
                   {note(tr("A small chat model from the Hugging Face Hub, kept where llama.cpp keeps its "
                            "downloads (and found there if it is already), then opened:")),
                    suggestions_, field, progressRow_, downloadError_});
}

void StartPage::startDownload(const QString& reference) {
    if (downloader_->isRunning() || reference.trimmed().isEmpty())
        return;
    downloadError_->hide();
    download_->setEnabled(false);
    suggestions_->setEnabled(false);
    progressBar_->setRange(0, 0); // busy until a size is known
    status_->setText(tr("Asking the hub for %1...").arg(reference.trimmed()));
    progressRow_->show();
    downloader_->start(reference);
}

void StartPage::showDownloadProgress(const DownloadProgress& progress) {
    if (progress.total > 0) {
        progressBar_->setRange(0, 1000);
        progressBar_->setValue(static_cast<int>(1000.0 * static_cast<double>(progress.done) /
                                                static_cast<double>(progress.total)));
    }
    status_->setText(progressText(progress));
}

void StartPage::showDownloadFailure(hub::HubErrorKind kind, const QString& message) {
    downloadEnded();
    downloadError_->setText(failureHeadline(kind) + QStringLiteral("\n") + message);
    downloadError_->show();
}

void StartPage::showDownloadCancelled() {
    downloadEnded();
    downloadError_->setText(tr("Download cancelled. What came is kept: the next download of this model goes on "
                               "from there."));
    downloadError_->show();
}

void StartPage::downloadEnded() {
    progressRow_->hide();
    download_->setEnabled(true);
    suggestions_->setEnabled(true);
}

void StartPage::setRecentFiles(const QStringList& files) {
    recentFiles_ = files;
    fillRecent();
}

void StartPage::fillRecent() {
    recent_->clear();
    const auto add = [this](const QString& text, const QString& path) {
        auto* item = new QListWidgetItem(text, recent_);
        item->setData(Qt::UserRole, path);
        item->setToolTip(path);
    };
    for (const QString& path : recentFiles_)
        add(QFileInfo(path).fileName(), path);
    for (const hub::CachedGguf& model : cachedModels()) {
        const QString path = QString::fromStdString(model.path.string());
        if (!recentFiles_.contains(path))
            add(tr("%1 · %2 · downloaded, %3")
                    .arg(QFileInfo(path).fileName(), QString::fromStdString(model.repo),
                         bytesText(static_cast<double>(model.bytes))),
                path);
    }
    if (recent_->count() == 0)
        showNoneYet(recent_);
}

void StartPage::setRecentServers(const std::vector<ConnectText>& servers) {
    servers_ = servers;
    recentServers_->clear();
    for (const ConnectText& server : servers_)
        new QListWidgetItem(RecentServers::label(server), recentServers_);
    if (servers_.empty())
        showNoneYet(recentServers_);
}

} // namespace kvscope::ui

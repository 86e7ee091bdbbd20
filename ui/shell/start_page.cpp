#include "ui/shell/start_page.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include "engine/presets/model_presets.h"
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

} // namespace

StartPage::StartPage(QWidget* parent)
    : QWidget(parent), recent_(new QListWidget), recentServers_(new QListWidget), preset_(new QComboBox) {
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
    sections->addWidget(
        section(tr("Model"), {note(tr("A LLaMA-family GGUF (llama, Mistral, TinyLlama, Qwen 2)."))}, open));
    sections->addWidget(section(tr("Recent files"), {recent_}));
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

void StartPage::setRecentFiles(const QStringList& files) {
    recent_->clear();
    for (const QString& path : files) {
        auto* item = new QListWidgetItem(QFileInfo(path).fileName(), recent_);
        item->setData(Qt::UserRole, path);
        item->setToolTip(path);
    }
    if (files.isEmpty())
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

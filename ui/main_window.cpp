#include "ui/main_window.h"

#include <QApplication>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>

#include "engine/core/device.h"
#include "ui/app_info.h"
#include "ui/playground_panel.h"

namespace kvscope::ui {
namespace {

constexpr int kStatusMessageMs = 4000;

// The playground's pools are host allocations whatever the machine has;
// a GPU, if found, is named but not claimed.
QString poolLocation(const ComputeDevice& device) {
    QString text = QObject::tr("KV pool: host memory (CPU)");
    if (device.cuda)
        text += QObject::tr(" \u00b7 CUDA device found: %1").arg(QString::fromStdString(device.name));
    return text;
}

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), playground_(new PlaygroundPanel) {
    setWindowTitle(QStringLiteral("kvscope"));
    setWindowIcon(appIcon());
    auto* tabs = new QTabWidget;
    tabs->setDocumentMode(true);
    tabs->addTab(playground_, tr("Allocator playground"));
    setCentralWidget(tabs);
    buildMenus();
    buildStatusBar();
    resize(1280, 800);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("Save &Screenshot..."), this, &MainWindow::saveScreenshot);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About kvscope"), this, &MainWindow::showAbout);
}

void MainWindow::buildStatusBar() {
    auto* location = new QLabel(poolLocation(detect_device()));
    location->setObjectName(QStringLiteral("poolLocation"));
    statusBar()->addPermanentWidget(location);
    connect(playground_, &PlaygroundPanel::operationApplied, this,
            [this](const QString& operation) { statusBar()->showMessage(operation, kStatusMessageMs); });
}

void MainWindow::saveScreenshot() {
    const QString file = QFileDialog::getSaveFileName(this, tr("Save Screenshot"), QStringLiteral("kvscope.png"),
                                                      tr("PNG images (*.png)"));
    if (!file.isEmpty() && !grab().save(file))
        QMessageBox::warning(this, tr("Save Screenshot"), tr("Could not write %1.").arg(file));
}

void MainWindow::showAbout() {
    QMessageBox::about(
        this, tr("About kvscope"),
        tr("<b>kvscope %1</b><p>See how an LLM's paged KV cache lives in memory: which blocks each sequence "
           "holds, and how much memory is wasted and where.</p><p>The allocator playground applies the same "
           "operations to a paged (vLLM) and a contiguous (pre-vLLM) pool.</p>")
            .arg(appVersion()));
}

} // namespace kvscope::ui

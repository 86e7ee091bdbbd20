// The main window offscreen without a model: the Chat tab (start page),
// Compare A/B and the allocator playground, the status bar says where the pool lives, and
// grab() saves a real PNG.
#include <QLabel>
#include <QMenuBar>
#include <QSet>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "ui/main_window.h"
#include "ui/playground_panel.h"

using namespace kvscope::ui;

class TestMainWindow : public QObject {
    Q_OBJECT

private slots:
    void chatCompareAndPlaygroundAreThePanels() {
        MainWindow window;
        auto* tabs = qobject_cast<QTabWidget*>(window.centralWidget());
        QVERIFY(tabs);
        QCOMPARE(tabs->tabText(0), QStringLiteral("Chat"));
        QCOMPARE(tabs->tabText(1), QStringLiteral("Compare A/B"));
        QVERIFY(tabs->widget(2)->isAncestorOf(window.playground()));
        QCOMPARE(tabs->tabText(2), QStringLiteral("Allocator playground"));
        window.showPlayground();
        QCOMPARE(tabs->currentIndex(), 2);
    }

    void statusBarSaysWhereThePoolLives() {
        MainWindow window;
        auto* location = window.statusBar()->findChild<QLabel*>(QStringLiteral("poolLocation"));
        QVERIFY(location);
        QVERIFY2(location->text().startsWith(QStringLiteral("KV pool: host RAM")), qPrintable(location->text()));
    }

    void menusOfferQuitAndAbout() {
        MainWindow window;
        QStringList actions;
        for (QAction* menu : window.menuBar()->actions())
            for (QAction* action : menu->menu()->actions())
                actions << action->text();
        QVERIFY2(actions.contains(QStringLiteral("&Quit")), qPrintable(actions.join(u',')));
        QVERIFY2(actions.contains(QStringLiteral("&About kvscope")), qPrintable(actions.join(u',')));
    }

    void grabSavesAPng() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        MainWindow window;
        window.playground()->runScenario(Scenario::Abc);
        window.showPlayground();
        window.resize(1280, 800);
        const QString file = dir.filePath(QStringLiteral("window.png"));
        QVERIFY(window.grab().save(file));

        QImage image(file);
        QVERIFY(!image.isNull());
        QCOMPARE(image.size(), QSize(1280, 800));
        // A blank or single-colour picture would mean nothing was painted.
        QSet<QRgb> colors;
        for (int y = 0; y < image.height(); y += 4)
            for (int x = 0; x < image.width(); x += 4)
                colors.insert(image.pixel(x, y));
        QVERIFY2(colors.size() > 20, qPrintable(QString::number(colors.size())));
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"

// The start page: its server section asks for the Connect to Server dialog
// and lists the recent servers; in the window, the button opens the same
// dialog as File > Connect to Server... and a recent server connects.
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTimer>
#include <QtTest>

#include "ui/server/connect_dialog.h"
#include "ui/shell/main_window.h"
#include "ui/server/recent_servers.h"
#include "ui/shell/start_page.h"

using namespace kvscope::ui;

class TestStartPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void connectButtonAsksForTheDialog() {
        StartPage page;
        QSignalSpy asked(&page, &StartPage::connectRequested);
        auto* button = page.findChild<QPushButton*>(QStringLiteral("connectServer"));
        QVERIFY(button);
        button->click();
        QCOMPARE(asked.count(), 1);
    }

    void recentServersAreListedAndPicked() {
        StartPage page;
        auto* list = page.findChild<QListWidget*>(QStringLiteral("recentServers"));
        QVERIFY(list);
        QCOMPARE(list->count(), 1); // "(none yet)", not pickable
        QVERIFY(!(list->item(0)->flags() & Qt::ItemIsEnabled));
        const ConnectText vllm{.url = QStringLiteral("http://10.0.0.1:8000"),
                               .kind = QStringLiteral("vllm"),
                               .kvEvents = QStringLiteral("tcp://10.0.0.1:5557,tcp://10.0.0.1:5558")};
        const ConnectText llama{.url = QStringLiteral("http://127.0.0.1:8080")};
        page.setRecentServers({vllm, llama});
        QCOMPARE(list->count(), 2);
        QCOMPARE(list->item(0)->text(), RecentServers::label(vllm));
        QStringList picked;
        connect(&page, &StartPage::recentServerRequested, this,
                [&picked](const ConnectText& text) { picked << text.url; });
        emit list->itemActivated(list->item(1));
        QCOMPARE(picked, QStringList{llama.url});
    }

    // The window answers the button with File > Connect to Server...'s dialog.
    void windowOpensTheConnectDialog() {
        MainWindow window;
        window.show();
        bool opened = false;
        QTimer::singleShot(0, &window, [&] {
            auto* dialog = window.findChild<ConnectDialog*>();
            opened = dialog && dialog->isVisible();
            if (dialog)
                dialog->reject();
        });
        window.startPage()->findChild<QPushButton*>(QStringLiteral("connectServer"))->click();
        QVERIFY(opened);
        QVERIFY(!window.isConnected()); // cancelled: nothing changes
    }
};

QTEST_MAIN(TestStartPage)
#include "test_start_page.moc"

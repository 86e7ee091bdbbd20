// EngineController failures that need no model: a chat turn before any
// model is loaded, a file that is not a GGUF, an unknown synthetic preset.
// Each arrives as a signal with a message naming the cause. Apart from
// test_engine_controller so that it runs (and counts) without the shared
// models folder.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "controller_test_support.h"
#include "ui/bridge/engine_controller.h"

using namespace kvscope;
using namespace kvscope::ui;
using namespace kvscope::ui::test;

class TestControllerFailures : public QObject {
    Q_OBJECT

private slots:
    void failuresArriveAsSignals() {
        EngineThread engine;
        EngineController* c = engine.controller();
        QSignalSpy finished(c, &EngineController::chatFinished);
        engine.submitChat(userTurn(1, "hello", 8));
        QVERIFY(arrives(finished, 1));
        QCOMPARE(lastStats(finished).finish, FinishReason::Error);
        QVERIFY2(QString::fromStdString(lastStats(finished).error).contains(QStringLiteral("no model")),
                 lastStats(finished).error.c_str());

        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("not-a-model.gguf"));
        QFile file(bad);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("this is not a GGUF file at all, just text");
        file.close();
        QSignalSpy failed(c, &EngineController::modelLoadFailed);
        engine.loadModel(ModelSource::file(bad));
        QVERIFY(arrives(failed, 1));
        QVERIFY2(failed.last().at(0).toString().contains(QStringLiteral("not-a-model.gguf")),
                 qPrintable(failed.last().at(0).toString()));

        QSignalSpy unknownPreset(c, &EngineController::modelLoadFailed);
        engine.loadModel(ModelSource::synthetic(QStringLiteral("no-such-preset")));
        QVERIFY(arrives(unknownPreset, 1));
        QVERIFY(unknownPreset.last().at(0).toString().contains(QStringLiteral("no-such-preset")));
    }

};

QTEST_MAIN(TestControllerFailures)
#include "test_controller_failures.moc"

// kvscope-cli bench client's errors that need no server and no model, run
// as a user runs it. Against a real kvscope-cli serve it is
// test_cli_bench_client_model (label model).
#include <QtTest>

#include "cli_runner.h"

using kvscope::test::run_cli;

class TestCliBenchClient : public QObject {
    Q_OBJECT
private slots:
    void unreachable_server_exits_1() {
        const auto r = run_cli({"bench", "client", "--url", "http://127.0.0.1:1", "--requests", "1"});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.err.contains("cannot reach"), r.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliBenchClient)
#include "test_cli_bench_client.moc"

// The comparison through the server: kvscope's /v1/completions with
// echo, logprobs 5, max_tokens 0 and return_tokens_as_token_ids on the
// 576 random token ids of tests/data/llamacpp/prompt.txt, against llama.cpp's
// lltop on the same model file (support/llamacpp_references.h). At each
// position: the same top-1 token (at the share of positions the file's
// MatchBar asks, support/llamacpp_references.h: 99% for F16; where not, ours
// and llama.cpp's top-1 a near-tie in our log-probs where the bar asks it),
// and every token of
// llama.cpp's top-4 that is in our top-5 within the bar's log-probability
// difference (0.02 for F16) of llama.cpp's. The files are CMake's
// KVSCOPE_LLAMACPP_FILES, as for tests/runtime/test_llamacpp_match.
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/llamacpp_references.h"
#include "support/served_model.h"

using namespace kvscope;
using namespace kvscope::test;
using json = nlohmann::json;

namespace {

const QString kDataDir = QStringLiteral(KVSCOPE_TEST_DATA "/llamacpp");

// The served engine: the reference's CPU numbers, in the KV dtype the
// file is compared in (reference_kv_dtype).
EngineConfig cpu_engine(KvDtype kv_dtype) {
    EngineConfig c;
    c.backend = Backend::Cpu;
    c.kv_dtype = kv_dtype;
    return c;
}

// "token_id:17" -> 17.
TokenId token_of(const std::string& key) { return static_cast<TokenId>(std::stol(key.substr(key.find(':') + 1))); }

} // namespace

class TestServeLlamaCppMatch : public QObject {
    Q_OBJECT
private slots:
    void echo_logprobs_match_data() {
        QTest::addColumn<QString>("file");
        for (const QString& file : model_files(KVSCOPE_LLAMACPP_FILES))
            QTest::newRow(qPrintable(file)) << file;
    }

    void echo_logprobs_match() {
        QFETCH(QString, file);
        QTemporaryDir dir;
        const Reference reference = read_reference(kDataDir + "/" + file + ".txt");
        const std::vector<TokenId> prompt = read_prompt(kDataDir);
        ServedModel served(make_reference_model(reference, file, dir, KVSCOPE_CLI).toStdString(), "reference",
                           cpu_engine(reference_kv_dtype(file, reference)), 2);
        const auto [status, body] = served.post("/v1/completions", {{"prompt", prompt},
                                                                    {"max_tokens", 0},
                                                                    {"echo", true},
                                                                    {"logprobs", 5},
                                                                    {"return_tokens_as_token_ids", true}});
        QCOMPARE(status, 200);
        const json& tops = body["choices"][0]["logprobs"]["top_logprobs"];
        QVERIFY(tops.size() >= prompt.size());
        QVERIFY(tops[0].is_null()); // the first token has no context

        const MatchBar bar = match_bar(file, reference);
        std::size_t agree = 0, ties = 0;
        double widest = 0;
        for (std::size_t p = 1; p < prompt.size(); ++p) {
            std::map<TokenId, double> ours;
            for (const auto& [key, logprob] : tops[p].items())
                ours[token_of(key)] = logprob.get<double>();
            const std::vector<TopEntry>& theirs = reference.top[p - 1]; // after position p - 1
            TokenId our_top = ours.begin()->first;
            for (const auto& [token, logprob] : ours)
                if (logprob > ours[our_top])
                    our_top = token;
            const TokenId their_top = theirs.front().token;
            if (our_top == their_top)
                ++agree;
            else if (ours.count(their_top) && ours[our_top] - ours[their_top] <= bar.tie)
                ++ties;
            else if (bar.every_miss_a_tie)
                QFAIL(qPrintable(QString("%1: position %2: our top-1 %3, llama.cpp's %4, not a tie")
                                     .arg(file).arg(p).arg(our_top).arg(their_top)));
            for (const TopEntry& e : theirs)
                if (ours.count(e.token))
                    widest = std::max(widest, std::fabs(ours[e.token] - e.logprob));
        }
        const double agreement = double(agree) / double(prompt.size() - 1);
        qInfo("%s: top-1 agreement %.4f, %zu near-ties, widest log-prob difference %.4f over %zu positions",
              qPrintable(file), agreement, ties, widest, prompt.size() - 1);
        QVERIFY2(agreement >= bar.min_top1, qPrintable(QString("top-1 agreement %1").arg(agreement)));
        QVERIFY2(widest <= bar.max_logprob_diff, qPrintable(QString("log-probabilities %1 apart").arg(widest)));
    }
};

QTEST_APPLESS_MAIN(TestServeLlamaCppMatch)
#include "test_serve_llamacpp_match.moc"

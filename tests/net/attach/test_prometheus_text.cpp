// The Prometheus text parser of net/attach: the strict parse takes what
// real servers send (prometheus_client's _created samples and summaries,
// llama.cpp's unlabelled series); the tolerant read keeps every good line
// around bad ones and says which lines it skipped and why. (The strict
// parse's refusals are tested in tests/serve/test_metrics_registry.cpp.)
#include <QtTest>

#include <string>

#include "net/attach/prometheus_text.h"

using namespace kvscope::attach;

namespace {

// Shaped as prometheus_client 0.0.4 output from vLLM: a counter with its
// _created sample, a histogram with _created, a summary.
const std::string kVllmLike = "# HELP vllm:num_preemptions_total Cumulative number of preemption.\n"
                              "# TYPE vllm:num_preemptions_total counter\n"
                              "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 3.0\n"
                              "# HELP vllm:num_preemptions_created Cumulative number of preemption.\n"
                              "# TYPE vllm:num_preemptions_created gauge\n"
                              "vllm:num_preemptions_created{engine=\"0\",model_name=\"m\"} 1.7645e+09\n"
                              "# TYPE vllm:time_to_first_token_seconds histogram\n"
                              "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\"} 2.0\n"
                              "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 5.0\n"
                              "vllm:time_to_first_token_seconds_count{engine=\"0\"} 5.0\n"
                              "vllm:time_to_first_token_seconds_sum{engine=\"0\"} 1.25\n"
                              "vllm:time_to_first_token_seconds_created{engine=\"0\"} 1.7645e+09\n"
                              "# TYPE rpc_seconds summary\n"
                              "rpc_seconds{quantile=\"0.5\"} 0.2\n"
                              "rpc_seconds_sum 10\n"
                              "rpc_seconds_count 40\n";

// As llama-server writes it: no labels, values from an ostream.
const std::string kLlamaLike = "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
                               "# TYPE llamacpp:prompt_tokens_total counter\n"
                               "llamacpp:prompt_tokens_total 1.2e+06\n"
                               "# HELP llamacpp:requests_processing Number of requests processing.\n"
                               "# TYPE llamacpp:requests_processing gauge\n"
                               "llamacpp:requests_processing 2\n";

} // namespace

class TestPrometheusText : public QObject {
    Q_OBJECT

private slots:
    void strict_takes_what_servers_send() {
        const PromText v = parse_prometheus_text(kVllmLike);
        QCOMPARE(v.value("vllm:num_preemptions_total", {{"engine", "0"}}), 3.0);
        QCOMPARE(v.value("vllm:time_to_first_token_seconds_created"), 1.7645e9);
        QCOMPARE(v.value("rpc_seconds", {{"quantile", "0.5"}}), 0.2);
        QCOMPARE(v.buckets("vllm:time_to_first_token_seconds").size(), std::size_t{2});
        const PromText l = parse_prometheus_text(kLlamaLike);
        QCOMPARE(l.value("llamacpp:prompt_tokens_total"), 1.2e6);
        QCOMPARE(l.types.at("llamacpp:requests_processing"), std::string("gauge"));
    }

    void tolerant_reads_good_text_whole() {
        const PromReadResult r = read_prometheus_text(kVllmLike + kLlamaLike);
        QVERIFY(r.skipped.empty());
        QCOMPARE(r.text.samples.size(), parse_prometheus_text(kVllmLike).samples.size() + 2);
    }

    void tolerant_skips_bad_lines_and_keeps_the_rest() {
        const std::string text = "a 1\n"
                                 "b{x=\"1} 2\n"          // unterminated label value
                                 "c 3\n"
                                 "d 1x\n"                // bad value
                                 "# TYPE e thing\n"      // unknown type
                                 "e 5\n"
                                 "a 7\n"                 // sample given twice
                                 "f{le=\"1\"} 8 12 extra\n" // trailing text
                                 "g 9";                  // no newline at the end
        const PromReadResult r = read_prometheus_text(text);
        QCOMPARE(r.text.value("a"), 1.0); // the first one stays
        QCOMPARE(r.text.value("c"), 3.0);
        QCOMPARE(r.text.value("e"), 5.0);
        QCOMPARE(r.text.value("g"), 9.0);
        QVERIFY(!r.text.has("b"));
        QVERIFY(!r.text.has("d"));
        QVERIFY(!r.text.has("f"));
        QCOMPARE(r.skipped.size(), std::size_t{5});
        const std::vector<int> lines{2, 4, 5, 7, 8};
        for (std::size_t i = 0; i < lines.size(); ++i)
            QCOMPARE(r.skipped[i].line, lines[i]);
        QVERIFY2(r.skipped[1].reason.find("bad value '1x'") != std::string::npos, r.skipped[1].reason.c_str());
        QVERIFY2(r.skipped[3].reason.find("given twice") != std::string::npos, r.skipped[3].reason.c_str());
    }

    void tolerant_takes_crlf_and_reports_broken_histograms() {
        const std::string text = "# TYPE h histogram\r\n"
                                 "h_bucket{le=\"1\"} 4\r\n"
                                 "h_bucket{le=\"2\"} 3\r\n" // not cumulative
                                 "h_bucket{le=\"+Inf\"} 4\r\n"
                                 "h_sum 2\r\n"
                                 "h_count 4\r\n"
                                 "x 1\r\n";
        QVERIFY_THROWS_EXCEPTION(PromTextError, parse_prometheus_text(text));
        const PromReadResult r = read_prometheus_text(text);
        QCOMPARE(r.text.value("x"), 1.0);
        QCOMPARE(r.skipped.size(), std::size_t{1});
        QCOMPARE(r.skipped[0].line, 3);
        QVERIFY(r.skipped[0].reason.find("not cumulative") != std::string::npos);
        QCOMPARE(r.text.buckets("h").size(), std::size_t{3}); // kept
    }

    void tolerant_survives_garbage() {
        static constexpr char kGarbage[] = "\0\x01{}\n# TYPE\n  \n\xff\xfe 1\n";
        const PromReadResult r = read_prometheus_text(std::string(kGarbage, sizeof kGarbage - 1));
        QVERIFY(r.text.samples.empty());
        QVERIFY(!r.skipped.empty());
    }
};

QTEST_GUILESS_MAIN(TestPrometheusText)
#include "test_prometheus_text.moc"

// net/attach: Prometheus text exposition format 0.0.4, read two ways.
//
// parse_prometheus_text is strict enough for tests to trust what a server's
// GET /metrics serves: anything a scraper would reject or misread throws
// PromTextError naming the line. It checks # HELP / # TYPE lines (one TYPE
// per family, before its samples; types counter, gauge, histogram, summary,
// untyped), metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names
// [a-zA-Z_][a-zA-Z0-9_]* (no repeats), label values with only \\ \" \n
// escapes, values (Go float syntax incl. NaN, +Inf, -Inf), an optional
// integer timestamp, no sample given twice, and for each histogram series:
// _bucket samples with an `le`, cumulative, an le="+Inf" bucket equal to its
// _count, and a _sum.
//
// read_prometheus_text is for live scraping: the same rules, but a line
// that breaks one is skipped and reported (line number and reason) and the
// rest is kept, so one bad line never loses a scrape. It also takes CRLF
// line ends. Legal text real servers send (prometheus_client's `_created`
// samples, summaries, llama.cpp's unlabelled series) passes both.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/core/error.h"

namespace kvscope::attach {

using PromLabels = std::map<std::string, std::string>;

struct PromSample {
    std::string name;
    PromLabels labels;
    double value = 0;
    std::optional<std::int64_t> timestamp_ms;
    int line = 0; // 1-based line of the text it came from
};

// Malformed exposition text (the message starts with "line N: "), or a
// PromText::value question with no single answer.
class PromTextError : public Error {
public:
    using Error::Error;
};

struct PromText {
    std::vector<PromSample> samples;           // in text order
    std::map<std::string, std::string> types;  // family name -> "counter", "gauge", ...
    std::map<std::string, std::string> help;   // family name -> unescaped docstring

    // Samples named `name` whose labels include every pair of `labels`.
    std::vector<const PromSample*> find(std::string_view name, const PromLabels& labels = {}) const;
    bool has(std::string_view name, const PromLabels& labels = {}) const { return !find(name, labels).empty(); }
    // The value of the one sample `find` returns; throws PromTextError when
    // none or several match (the caller asked an ambiguous question).
    double value(std::string_view name, const PromLabels& labels = {}) const;
    // A histogram series' `le` bucket counts, ascending le (+Inf last).
    std::vector<std::pair<double, double>> buckets(std::string_view histogram, const PromLabels& labels = {}) const;

    static std::string describe(const PromLabels& labels); // {a="1",b="2"}
    // Go's ParseFloat as the format uses it: decimal or exponent floats,
    // NaN, [+-]Inf; nullopt when `text` is none of them.
    static std::optional<double> parse_float(std::string_view text);
};

// Throws PromTextError ("line N: ...") on anything malformed.
PromText parse_prometheus_text(std::string_view text);

// A line read_prometheus_text left out, and why.
struct PromSkippedLine {
    int line = 0;
    std::string reason; // "bad value 'x' in \"a x\""
};

struct PromReadResult {
    PromText text;                      // everything that was well formed
    std::vector<PromSkippedLine> skipped;
};

// Never throws on text: malformed lines are skipped and listed. A histogram
// series that breaks the histogram rules is listed at its first offending
// line and its samples kept (readers of buckets clamp what they use).
PromReadResult read_prometheus_text(std::string_view text);

} // namespace kvscope::attach

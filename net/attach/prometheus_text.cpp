#include "net/attach/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <locale>
#include <set>
#include <sstream>
#include <string>

namespace kvscope::attach {

std::vector<const PromSample*> PromText::find(std::string_view name, const PromLabels& labels) const {
    std::vector<const PromSample*> found;
    for (const PromSample& s : samples)
        if (s.name == name && std::ranges::all_of(labels, [&](const auto& kv) {
                const auto it = s.labels.find(kv.first);
                return it != s.labels.end() && it->second == kv.second;
            }))
            found.push_back(&s);
    return found;
}

double PromText::value(std::string_view name, const PromLabels& labels) const {
    const auto found = find(name, labels);
    if (found.size() != 1)
        throw PromTextError(std::to_string(found.size()) + " samples match " + std::string(name) + describe(labels) +
                            ", expected exactly 1");
    return found.front()->value;
}

std::vector<std::pair<double, double>> PromText::buckets(std::string_view histogram, const PromLabels& labels) const {
    std::vector<std::pair<double, double>> out;
    for (const PromSample* s : find(std::string(histogram) + "_bucket", labels)) {
        const auto le = s->labels.find("le");
        if (le != s->labels.end())
            out.emplace_back(parse_float(le->second).value_or(NAN), s->value);
    }
    std::ranges::sort(out);
    return out;
}

std::string PromText::describe(const PromLabels& labels) {
    std::string out = "{";
    for (const auto& [k, v] : labels)
        out += (out.size() > 1 ? "," : "") + k + "=\"" + v + "\"";
    return out + "}";
}

std::optional<double> PromText::parse_float(std::string_view text) {
    if (text == "NaN")
        return std::numeric_limits<double>::quiet_NaN();
    if (text == "+Inf" || text == "Inf")
        return std::numeric_limits<double>::infinity();
    if (text == "-Inf")
        return -std::numeric_limits<double>::infinity();
    const std::string_view body = text.starts_with('+') ? text.substr(1) : text;
    if (body.empty() || body.starts_with('+'))
        return std::nullopt;
    // Not std::from_chars: libc++ has no floating-point one before LLVM 20
    // (Apple clang included). Not strtod: it reads the decimal separator of
    // the process's locale, which a Qt app sets from the user's. A stream in
    // the classic locale, which must read every character, does neither.
    std::istringstream in{std::string(body)};
    in.imbue(std::locale::classic());
    double v = 0;
    in >> std::noskipws >> v;
    if (in.fail() || in.peek() != std::char_traits<char>::eof() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

// One line being read; every failure names its line.
struct Cursor {
    std::string_view text;
    int line = 0;
    std::size_t pos = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw PromTextError("line " + std::to_string(line) + ": " + what + " in \"" + std::string(text) + "\"");
    }
    bool at_end() const { return pos >= text.size(); }
    char peek() const { return at_end() ? '\0' : text[pos]; }
    void skip_blanks() {
        while (!at_end() && (text[pos] == ' ' || text[pos] == '\t'))
            ++pos;
    }
    void expect(char c) {
        if (peek() != c)
            fail(std::string("expected '") + c + "' at column " + std::to_string(pos + 1));
        ++pos;
    }
    // A metric name (colons allowed) or a label name.
    std::string name(bool colons) {
        const auto allowed = [&](char ch, bool first) {
            return name_start(ch) || (colons && ch == ':') || (!first && ch >= '0' && ch <= '9');
        };
        const std::size_t begin = pos;
        while (!at_end() && allowed(text[pos], pos == begin))
            ++pos;
        if (pos == begin)
            fail(std::string(colons ? "metric" : "label") + " name expected at column " + std::to_string(pos + 1));
        return std::string(text.substr(begin, pos - begin));
    }
    std::string token() {
        const std::size_t begin = pos;
        while (!at_end() && text[pos] != ' ' && text[pos] != '\t')
            ++pos;
        return std::string(text.substr(begin, pos - begin));
    }
    // A quoted label value; only \\ \" \n escapes.
    std::string quoted() {
        expect('"');
        std::string out;
        for (;;) {
            if (at_end())
                fail("unterminated label value");
            const char c = text[pos++];
            if (c == '"')
                return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            const char e = peek();
            ++pos;
            if (e == '\\' || e == '"')
                out += e;
            else if (e == 'n')
                out += '\n';
            else
                fail(std::string("bad escape \\") + e + " in label value");
        }
    }
};

std::string unescape_help(const Cursor& c, std::string_view doc) {
    std::string out;
    for (std::size_t i = 0; i < doc.size(); ++i) {
        if (doc[i] != '\\') {
            out += doc[i];
            continue;
        }
        if (i + 1 == doc.size())
            c.fail("HELP ends in a lone backslash");
        const char e = doc[++i];
        if (e == '\\')
            out += '\\';
        else if (e == 'n')
            out += '\n';
        else
            c.fail(std::string("bad escape \\") + e + " in HELP");
    }
    return out;
}

// The family a sample belongs to: a histogram's or summary's _bucket, _sum,
// _count samples belong to the family without the suffix.
std::string family_of(const std::string& name, const std::map<std::string, std::string>& types) {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (!name.ends_with(suffix))
            continue;
        const std::string base = name.substr(0, name.size() - suffix.size());
        const auto it = types.find(base);
        if (it != types.end() && (it->second == "histogram" || (it->second == "summary" && suffix != "_bucket")))
            return base;
    }
    return name;
}

// Reads line by line into `out`; each rule broken throws from its line, and
// the caller decides whether that ends the read (strict) or the line (tolerant).
struct Parser {
    PromText out;
    std::set<std::string> families_seen;               // families with a sample already
    std::set<std::pair<std::string, PromLabels>> keys; // (name, labels) already given

    void comment(Cursor& c) {
        c.expect('#');
        c.skip_blanks();
        const std::string keyword = c.token();
        if (keyword != "HELP" && keyword != "TYPE")
            return; // a plain comment
        c.skip_blanks();
        const std::string name = c.name(true);
        if (!c.at_end() && c.peek() != ' ' && c.peek() != '\t')
            c.fail("bad character in metric name");
        c.skip_blanks();
        const std::string_view rest = c.text.substr(std::min(c.pos, c.text.size()));
        if (keyword == "HELP") {
            std::string doc = unescape_help(c, rest);
            if (!out.help.emplace(name, std::move(doc)).second)
                c.fail("second HELP for " + name);
            return;
        }
        static const std::set<std::string_view> kTypes{"counter", "gauge", "histogram", "summary", "untyped"};
        if (!kTypes.contains(rest))
            c.fail("unknown metric type '" + std::string(rest) + "'");
        if (families_seen.contains(name))
            c.fail("TYPE for " + name + " after its samples");
        if (!out.types.emplace(name, std::string(rest)).second)
            c.fail("second TYPE for " + name);
    }

    static PromLabels labels(Cursor& c) {
        PromLabels labels;
        c.expect('{');
        c.skip_blanks();
        while (c.peek() != '}') {
            const std::string key = c.name(false);
            c.skip_blanks();
            c.expect('=');
            c.skip_blanks();
            if (!labels.emplace(key, c.quoted()).second)
                c.fail("label " + key + " given twice");
            c.skip_blanks();
            if (c.peek() == ',') {
                ++c.pos;
                c.skip_blanks();
            } else if (c.peek() != '}') {
                c.fail("expected ',' or '}' at column " + std::to_string(c.pos + 1));
            }
        }
        ++c.pos;
        return labels;
    }

    void sample(Cursor& c) {
        PromSample s;
        s.line = c.line;
        s.name = c.name(true);
        if (c.peek() == '{')
            s.labels = labels(c);
        if (c.peek() != ' ' && c.peek() != '\t')
            c.fail("expected a blank before the value at column " + std::to_string(c.pos + 1));
        c.skip_blanks();
        const std::string value = c.token();
        const auto v = PromText::parse_float(value);
        if (!v)
            c.fail("bad value '" + value + "'");
        s.value = *v;
        c.skip_blanks();
        if (!c.at_end()) {
            const std::string ts = c.token();
            std::int64_t t = 0;
            const auto [end, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
            if (ec != std::errc{} || end != ts.data() + ts.size())
                c.fail("bad timestamp '" + ts + "'");
            s.timestamp_ms = t;
            c.skip_blanks();
            if (!c.at_end())
                c.fail("trailing text after the timestamp");
        }
        if (!keys.emplace(s.name, s.labels).second)
            c.fail("sample " + s.name + PromText::describe(s.labels) + " given twice");
        families_seen.insert(family_of(s.name, out.types));
        out.samples.push_back(std::move(s));
    }

    void line(std::string_view text, int number) {
        Cursor c{text, number};
        c.skip_blanks();
        if (c.at_end())
            return;
        if (c.peek() == '#')
            comment(c);
        else
            sample(c);
    }
};

[[noreturn]] void fail_at(int line, const std::string& what) {
    throw PromTextError("line " + std::to_string(line) + ": " + what);
}

// The sample named `name` with exactly `labels`; null when absent.
const PromSample* exact(const PromText& text, const std::string& name, const PromLabels& labels) {
    const auto it =
        std::ranges::find_if(text.samples, [&](const PromSample& s) { return s.name == name && s.labels == labels; });
    return it == text.samples.end() ? nullptr : &*it;
}

// One histogram series (labels without le): buckets cumulative, +Inf bucket
// == _count, a _sum.
void check_series(const PromText& text, const std::string& family, const PromLabels& labels,
                  std::vector<const PromSample*>& buckets) {
    std::ranges::sort(buckets, {}, [](const PromSample* b) { return *PromText::parse_float(b->labels.at("le")); });
    for (std::size_t i = 1; i < buckets.size(); ++i)
        if (buckets[i]->value < buckets[i - 1]->value)
            fail_at(buckets[i]->line, family + " buckets are not cumulative");
    const PromSample* inf = buckets.back();
    if (!std::isinf(*PromText::parse_float(inf->labels.at("le"))))
        fail_at(inf->line, family + PromText::describe(labels) + " has no le=\"+Inf\" bucket");
    const PromSample* count = exact(text, family + "_count", labels);
    if (!count)
        fail_at(inf->line, family + PromText::describe(labels) + " has no _count");
    if (count->value != inf->value)
        fail_at(count->line, family + "_count differs from its le=\"+Inf\" bucket");
    if (!exact(text, family + "_sum", labels))
        fail_at(inf->line, family + PromText::describe(labels) + " has no _sum");
}

// Checks every series of a histogram family; `on_error` gets each failure
// (strict: rethrows; tolerant: records and goes on with the next series).
void check_histogram(const PromText& text, const std::string& family,
                     const std::function<void(const PromTextError&)>& on_error) {
    std::map<PromLabels, std::vector<const PromSample*>> series;
    for (const PromSample* b : text.find(family + "_bucket")) {
        try {
            const auto le = b->labels.find("le");
            if (le == b->labels.end())
                fail_at(b->line, family + "_bucket without an le label");
            if (!PromText::parse_float(le->second))
                fail_at(b->line, "bad le \"" + le->second + "\"");
            PromLabels key = b->labels;
            key.erase("le");
            series[key].push_back(b);
        } catch (const PromTextError& e) {
            on_error(e);
        }
    }
    for (auto& [labels, buckets] : series) {
        try {
            check_series(text, family, labels, buckets);
        } catch (const PromTextError& e) {
            on_error(e);
        }
    }
}

// Calls f(line, number) for each line, without a trailing '\r'.
template <class F>
void for_each_line(std::string_view text, F&& f) {
    int number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        std::string_view line = text.substr(0, end);
        if (line.ends_with('\r'))
            line.remove_suffix(1);
        f(line, ++number);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    }
}

// "line 12: bad value ..." -> 12 and "bad value ...".
PromSkippedLine skipped_of(const PromTextError& e) {
    const std::string_view what = e.what();
    PromSkippedLine s;
    const std::size_t colon = what.find(": ");
    if (what.starts_with("line ") && colon != std::string_view::npos) {
        std::from_chars(what.data() + 5, what.data() + colon, s.line);
        s.reason = std::string(what.substr(colon + 2));
    } else {
        s.reason = std::string(what);
    }
    return s;
}

} // namespace

PromText parse_prometheus_text(std::string_view text) {
    Parser parser;
    int number = 0;
    // Strict: '\r' is not a line end of the format, so it stays in the line.
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        parser.line(text.substr(0, end), ++number);
        text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    }
    for (const auto& [family, type] : parser.out.types)
        if (type == "histogram")
            check_histogram(parser.out, family, [](const PromTextError& e) { throw e; });
    return std::move(parser.out);
}

PromReadResult read_prometheus_text(std::string_view text) {
    Parser parser;
    PromReadResult result;
    for_each_line(text, [&](std::string_view line, int number) {
        try {
            parser.line(line, number);
        } catch (const PromTextError& e) {
            result.skipped.push_back(skipped_of(e));
        }
    });
    for (const auto& [family, type] : parser.out.types)
        if (type == "histogram")
            check_histogram(parser.out, family,
                            [&](const PromTextError& e) { result.skipped.push_back(skipped_of(e)); });
    result.text = std::move(parser.out);
    return result;
}

} // namespace kvscope::attach

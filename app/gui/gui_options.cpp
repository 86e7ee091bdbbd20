#include "app/gui/gui_options.h"

#include <array>
#include <cstdio>
#include <string>

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QCoreApplication>

#include "app/gui/fail.h"
#include "engine/core/error.h"
#include "engine/core/log.h"
#include "net/hub/model_path.h"

namespace kvscope::gui {
namespace {

constexpr QSize kScreenshotSize(1280, 800);
constexpr QSize kMinWindowSize(640, 480);
constexpr QSize kMaxWindowSize(7680, 4320);

// A --bench-paint option taking a number; the help shows its default.
QCommandLineOption benchPaintNumber(const char* name, const char* what, const char* valueName, std::int64_t fallback) {
    return {QString::fromLatin1(name),
            QStringLiteral("With --bench-paint: %1 (default %2).").arg(QString::fromLatin1(what)).arg(fallback),
            QString::fromLatin1(valueName)};
}

// Every option kvscope takes, in the order --help lists them.
struct Options {
    QCommandLineOption model{QStringLiteral("model"),
                             QStringLiteral("Open this GGUF model and start a chat; hf://ORG/NAME[:QUANT] takes it "
                                            "from the Hugging Face cache, downloaded first when not there."),
                             QStringLiteral("FILE")};
    QCommandLineOption synthetic{QStringLiteral("synthetic"),
                                 QStringLiteral("Build a model of this preset's shape with random weights "
                                                "(meaningless text, real memory) and start a chat."),
                                 QStringLiteral("PRESET")};
    QCommandLineOption prompt{QStringLiteral("prompt"),
                              QStringLiteral("Send this message in the first chat once the model is loaded; "
                                             "repeat it for more turns, each sent when the reply before "
                                             "has ended."),
                              QStringLiteral("TEXT")};
    QCommandLineOption workload{QStringLiteral("workload"),
                                QStringLiteral("Once the model is loaded, also start a synthetic workload of N "
                                               "requests (the Workload dock's other settings)."),
                                QStringLiteral("N")};
    QCommandLineOption screenshot{QStringLiteral("screenshot"),
                                  QStringLiteral("Render the main window offscreen to FILE (.png) and exit; "
                                                 "with a model, after the last --prompt turn has finished "
                                                 "(exit status 1 if a turn fails)."),
                                  QStringLiteral("FILE")};
    QCommandLineOption afterMs{QStringLiteral("after-ms"),
                               QStringLiteral("With --screenshot and a model: render this long after the "
                                              "prompt is sent, while it may still be generating (default: "
                                              "when the turn has finished); with --connect, this long after "
                                              "connecting (default: once the server has answered)."),
                               QStringLiteral("MS")};
    QCommandLineOption compare{QStringLiteral("compare"),
                               QStringLiteral("Once the model is loaded, start Compare A/B's engine B with its "
                                              "default settings: the prompts and workload go to both.")};
    QCommandLineOption size{QStringLiteral("window-size"),
                            QStringLiteral("The window's size, e.g. 1600x1000 (screenshots: 1280x800 unless "
                                           "given)."),
                            QStringLiteral("WxH")};
    QCommandLineOption theme{QStringLiteral("theme"),
                             QStringLiteral("system, light or dark, for this run (View > Theme chooses the "
                                            "one kept between runs)."),
                             QStringLiteral("THEME")};
    QCommandLineOption tab{QStringLiteral("tab"),
                           QStringLiteral("Show this tab once the model is loaded: %1.")
                               .arg(ui::MainWindow::pageNames().join(QStringLiteral(", "))),
                           QStringLiteral("TAB")};
    QCommandLineOption show{QStringLiteral("show"),
                            QStringLiteral("Bring this dock to the front once the model is loaded: %1.")
                                .arg(ui::MainWindow::dockNames().join(QStringLiteral(", "))),
                            QStringLiteral("DOCK")};
    QCommandLineOption scenario{QStringLiteral("scenario"),
                                QStringLiteral("Play a scenario in the allocator playground first: abc (the "
                                               "A/B/C fragmentation example) or parallel (parallel sampling)."),
                                QStringLiteral("NAME")};
    QCommandLineOption connectUrl{
        QStringLiteral("connect"),
        QStringLiteral("Watch the server at this URL (kvscope-cli serve, llama.cpp's llama-server or vLLM), as "
                       "File > Connect to Server does; with --screenshot, once it has answered."),
        QStringLiteral("URL")};
    QCommandLineOption kvEvents{QStringLiteral("kv-events"),
                                QStringLiteral("With --connect to vLLM: its KV-events publishers, "
                                               "comma-separated, one per data-parallel rank."),
                                QStringLiteral("tcp://HOST:PORT[,...]")};
    QCommandLineOption kvReplay{QStringLiteral("kv-replay"),
                                QStringLiteral("With --kv-events: the publishers' replay endpoints, in the "
                                               "same order."),
                                QStringLiteral("tcp://HOST:PORT[,...]")};
    QCommandLineOption kvTopic{QStringLiteral("kv-topic"),
                               QStringLiteral("With --kv-events: the publishers' topic (default: every topic)."),
                               QStringLiteral("TOPIC")};
    QCommandLineOption apiKey{QStringLiteral("api-key"), QStringLiteral("With --connect: sent as a bearer token."),
                              QStringLiteral("KEY")};
    QCommandLineOption serverKind{QStringLiteral("server-kind"),
                                  QStringLiteral("With --connect: %1 (default auto: detected).")
                                      .arg(ui::serverKindNames().join(QStringLiteral(", "))),
                                  QStringLiteral("KIND")};
    QCommandLineOption kvDtype{QStringLiteral("kv-dtype"),
                               QStringLiteral("With --connect to llama.cpp: its KV cache type (-ctk), which it "
                                              "does not report: %1 (default f16).")
                                   .arg(ui::llamaCppKvDtypes().join(QStringLiteral(", "))),
                               QStringLiteral("TYPE")};
    QCommandLineOption kvUnified{QStringLiteral("kv-unified"),
                                 QStringLiteral("With --connect to llama.cpp: whether its slots share one KV "
                                                "buffer (-kvu), which it does not report: yes, no or auto "
                                                "(default: guess, shared with 4 slots)."),
                                 QStringLiteral("yes|no|auto")};
    QCommandLineOption logLevel{QStringLiteral("log-level"),
                                QStringLiteral("trace, debug, info, warn, error, critical or off."),
                                QStringLiteral("LEVEL"), QStringLiteral("info")};
    QCommandLineOption benchPaint{QStringLiteral("bench-paint"),
                                  QStringLiteral("Time painting the block map of a large, busy pool "
                                                 "(offscreen), print the median and p95 ms per frame, and exit.")};
    QCommandLineOption blocks = benchPaintNumber("blocks", "blocks in the pool", "N", BenchPaintOptions{}.blocks);
    QCommandLineOption frames = benchPaintNumber("frames", "frames to time", "F", BenchPaintOptions{}.frames);
    QCommandLineOption width = benchPaintNumber("width", "the block map's width", "W", BenchPaintOptions{}.width);
    QCommandLineOption height = benchPaintNumber("height", "the block map's height", "H", BenchPaintOptions{}.height);
    QCommandLineOption json{QStringLiteral("json"), QStringLiteral("With --bench-paint: print one JSON object.")};

    void addTo(QCommandLineParser& parser) const {
        parser.addOptions({model, synthetic, prompt, workload, screenshot, afterMs, compare, size, theme, tab, show,
                           scenario, connectUrl, kvEvents, kvReplay, kvTopic, apiKey, serverKind, kvDtype,
                           kvUnified, logLevel, benchPaint, blocks, frames, width, height, json});
    }

    // The options that only mean something with --connect.
    std::array<const QCommandLineOption*, 7> connectOnly() const {
        return {&kvEvents, &kvReplay, &kvTopic, &apiKey, &serverKind, &kvDtype, &kvUnified};
    }
};

// Says what is wrong (as fail does) and returns false. Each read* function
// below puts its option's checked value into `out`, or returns this.
bool refuse(const QString& message) {
    fail(message);
    return false;
}

// At once: whatever runs next may log.
bool applyLogLevel(const QCommandLineParser& parser, const Options& o) {
    try {
        set_log_level(parser.value(o.logLevel).toStdString());
        return true;
    } catch (const Error& e) {
        return refuse(QString::fromUtf8(e.what()));
    }
}

bool readModelSource(const QCommandLineParser& parser, const Options& o, std::optional<ui::ModelSource>& out) {
    if (parser.isSet(o.model) && parser.isSet(o.synthetic))
        return refuse(QStringLiteral("--model and --synthetic are alternatives; give one"));
    if (parser.isSet(o.model)) {
        // hf://ORG/NAME[:QUANT]: the cached file, else pulled first (progress
        // on a terminal), through net/hub's resolver, as kvscope-cli resolves it.
        try {
            out = ui::ModelSource::file(QString::fromStdString(
                hub::resolve_model_path(parser.value(o.model).toStdString(), hub::terminal_progress(stderr))));
        } catch (const Error& e) {
            return refuse(QString::fromUtf8(e.what()));
        }
    } else if (parser.isSet(o.synthetic))
        out = ui::ModelSource::synthetic(parser.value(o.synthetic));
    return true;
}

bool readAfterMs(const QCommandLineParser& parser, const Options& o, std::optional<int>& out) {
    if (!parser.isSet(o.afterMs))
        return true;
    bool ok = false;
    out = parser.value(o.afterMs).toInt(&ok);
    if (!ok || *out < 0)
        return refuse(
            QStringLiteral("--after-ms needs a number of milliseconds, got '%1'").arg(parser.value(o.afterMs)));
    return true;
}

// The option's value as an integer in [min, max], `fallback` when it is not
// given, or nullopt (after saying why) when it is not such a number.
std::optional<std::int64_t> intOption(const QCommandLineParser& parser, const QCommandLineOption& option,
                                      std::int64_t fallback, std::int64_t min, std::int64_t max) {
    if (!parser.isSet(option))
        return fallback;
    bool ok = false;
    const qlonglong value = parser.value(option).toLongLong(&ok);
    if (ok && value >= min && value <= max)
        return value;
    fail(QStringLiteral("--%1 needs a whole number from %2 to %3, got '%4'")
             .arg(option.names().first())
             .arg(min)
             .arg(max)
             .arg(parser.value(option)));
    return std::nullopt;
}

// --bench-paint's numbers; nullopt when any is wrong, after saying so for
// each of them (all four are read, so that every mistake is reported).
std::optional<BenchPaintOptions> readBenchPaint(const QCommandLineParser& parser, const Options& o) {
    const BenchPaintOptions paint;
    const auto n = intOption(parser, o.blocks, paint.blocks, 1, 1 << 20);
    const auto f = intOption(parser, o.frames, paint.frames, 1, 10000);
    const auto w = intOption(parser, o.width, paint.width, 64, 8192);
    const auto h = intOption(parser, o.height, paint.height, 64, 8192);
    if (!n || !f || !w || !h)
        return std::nullopt;
    return BenchPaintOptions{.blocks = static_cast<std::uint32_t>(*n),
                             .frames = static_cast<int>(*f),
                             .width = static_cast<int>(*w),
                             .height = static_cast<int>(*h),
                             .json = parser.isSet(o.json)};
}

bool readTheme(const QCommandLineParser& parser, const Options& o, ui::Theme& out) {
    if (!parser.isSet(o.theme)) {
        out = ui::savedTheme();
        return true;
    }
    const auto chosen = ui::parseTheme(parser.value(o.theme));
    if (!chosen)
        return refuse(QStringLiteral("--theme needs system, light or dark, got '%1'").arg(parser.value(o.theme)));
    out = *chosen;
    return true;
}

// --window-size WxH, e.g. 1600x1000; nullopt (after saying why) when it is
// not such a size within the limits.
std::optional<QSize> windowSize(const QString& text) {
    const QStringList parts = text.split(QLatin1Char('x'));
    bool okW = false, okH = false;
    const QSize size = parts.size() == 2 ? QSize(parts[0].toInt(&okW), parts[1].toInt(&okH)) : QSize();
    if (okW && okH && size.expandedTo(kMinWindowSize) == size && size.boundedTo(kMaxWindowSize) == size)
        return size;
    fail(QStringLiteral("--window-size needs WIDTHxHEIGHT from %1x%2 to %3x%4, e.g. 1600x1000; got '%5'")
             .arg(kMinWindowSize.width())
             .arg(kMinWindowSize.height())
             .arg(kMaxWindowSize.width())
             .arg(kMaxWindowSize.height())
             .arg(text));
    return std::nullopt;
}

// The size asked for; without one, a screenshot gets kScreenshotSize and a
// window on screen its own.
bool readWindowSize(const QCommandLineParser& parser, const Options& o, std::optional<QSize>& out) {
    if (parser.isSet(o.size)) {
        out = windowSize(parser.value(o.size));
        return out.has_value();
    }
    if (parser.isSet(o.screenshot))
        out = kScreenshotSize;
    return true;
}

bool readView(const QCommandLineParser& parser, const Options& o, RequestedView& out) {
    if (parser.isSet(o.tab) && !(out.page = ui::MainWindow::parsePage(parser.value(o.tab))))
        return refuse(QStringLiteral("unknown tab '%1' (known: %2)")
                          .arg(parser.value(o.tab), ui::MainWindow::pageNames().join(QStringLiteral(", "))));
    out.dock = parser.value(o.show);
    if (parser.isSet(o.show) && !ui::MainWindow::dockNames().contains(out.dock))
        return refuse(QStringLiteral("unknown dock '%1' (known: %2)")
                          .arg(out.dock, ui::MainWindow::dockNames().join(QStringLiteral(", "))));
    return true;
}

bool readScenario(const QCommandLineParser& parser, const Options& o, std::optional<ui::Scenario>& out) {
    if (!parser.isSet(o.scenario))
        return true;
    out = ui::parse_scenario(parser.value(o.scenario).toStdString());
    if (!out)
        return refuse(QStringLiteral("unknown scenario '%1' (known: abc, parallel)").arg(parser.value(o.scenario)));
    return true;
}

bool readWorkload(const QCommandLineParser& parser, const Options& o, std::optional<std::uint32_t>& out) {
    if (!parser.isSet(o.workload))
        return true;
    bool ok = false;
    out = parser.value(o.workload).toUInt(&ok);
    if (!ok || *out == 0)
        return refuse(QStringLiteral("--workload needs a number of requests, got '%1'").arg(parser.value(o.workload)));
    return true;
}

// --prompt, --workload and --compare drive a local engine: they need one.
bool checkLocalRun(const GuiOptions& options) {
    if ((!options.prompts.isEmpty() || options.workload || options.compare) && !options.source)
        return refuse(QStringLiteral("--prompt, --workload and --compare need --model or --synthetic"));
    return true;
}

// --connect and the options that go with it, checked by
// ui::connectOptions so that what is wrong is said before any window shows.
bool readServer(const QCommandLineParser& parser, const Options& o, bool localEngine,
                std::optional<ui::ConnectText>& out) {
    const bool connecting = parser.isSet(o.connectUrl);
    if (connecting && localEngine)
        return refuse(
            QStringLiteral("--connect watches a server; --model and --synthetic run a local engine: give one"));
    for (const QCommandLineOption* option : o.connectOnly())
        if (parser.isSet(*option) && !connecting)
            return refuse(QStringLiteral("--%1 needs --connect").arg(option->names().first()));
    if (!connecting)
        return true;
    out = ui::ConnectText{parser.value(o.connectUrl), parser.value(o.apiKey),  parser.value(o.serverKind),
                          parser.value(o.kvEvents),   parser.value(o.kvReplay), parser.value(o.kvTopic),
                          parser.value(o.kvDtype),    parser.value(o.kvUnified)};
    try {
        ui::connectOptions(*out);
        return true;
    } catch (const Error& e) {
        return refuse(QString::fromUtf8(e.what()));
    }
}

// Everything a window run takes, the options that only a window uses.
bool readWindowRun(const QCommandLineParser& parser, const Options& o, GuiOptions& out) {
    out.prompts = parser.values(o.prompt);
    out.compare = parser.isSet(o.compare);
    if (parser.isSet(o.screenshot))
        out.screenshot = parser.value(o.screenshot);
    return readTheme(parser, o, out.theme) && readWindowSize(parser, o, out.windowSize) &&
           readView(parser, o, out.view) && readScenario(parser, o, out.scenario) &&
           readWorkload(parser, o, out.workload) && checkLocalRun(out) &&
           readServer(parser, o, out.source.has_value(), out.server);
}

} // namespace

std::variant<GuiOptions, int> parseOptions(const QCoreApplication& app) {
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("See how an LLM's paged KV cache lives in memory."));
    parser.addHelpOption();
    parser.addVersionOption();
    const Options o;
    o.addTo(parser);
    parser.process(app); // --help, --version and a mistyped option end the process here

    // The checks go in a fixed order: with several mistakes, the first in
    // this order is the one reported.
    GuiOptions out;
    if (!applyLogLevel(parser, o) || !readModelSource(parser, o, out.source) || !readAfterMs(parser, o, out.afterMs))
        return 1;
    if (parser.isSet(o.benchPaint)) { // it shows no window: the window's options are not read
        out.benchPaint = readBenchPaint(parser, o);
        if (!out.benchPaint)
            return 1;
        return out;
    }
    if (!readWindowRun(parser, o, out))
        return 1;
    return out;
}

} // namespace kvscope::gui

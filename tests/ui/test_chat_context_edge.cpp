// One chat of 20 turns, driven through the app (EngineController, as the
// chat panel sends turns) and through /v1/chat/completions (the OpenAI
// translation over an EngineService, as a client that follows the
// response's kvscope_context keeps its history), on the same model: both
// apply engine/chat's one context policy at the context's edge. Both keep
// answering, leave out the oldest exchanges (never the system prompt),
// limit the last, long turn's reply to the room left, and say so in the
// same words. The model is a synthetic llama-15m (256 tokens of context)
// with a ChatML template, made in a temporary folder: no shared models.
#include <QtTest>

#include <QSignalSpy>
#include <QTemporaryDir>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_session.h"
#include "engine/model/synthetic_model.h"
#include "engine/presets/model_presets.h"
#include "engine/runtime/model.h"
#include "engine/service/engine_service.h"
#include "engine/tokenizer/chat_template.h"
#include "net/serve/openai_request.h"
#include "support/wait.h"
#include "ui/bridge/engine_controller.h"

using namespace kvscope;
using namespace kvscope::ui;
using nlohmann::json;

namespace {

constexpr int kTurns = 20;
constexpr std::uint32_t kReplyTokens = 24;
constexpr std::uint32_t kLastReplyTokens = 200; // more than the context leaves: limited
const std::string kSystem = "You tell short stories.";

const char* const kChatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Turn i's message: short ones, then one long enough that, with the system
// prompt, it leaves less room than kLastReplyTokens (this synthetic
// vocabulary spends several tokens a word).
std::string userMessage(int turn) {
    if (turn < kTurns - 1)
        return "Tell me story number " + std::to_string(turn + 1) + ", please.";
    return "Tell me a long story about a little dog and a big red ball in the park, with his friends. ";
}

std::uint32_t replyTokens(int turn) { return turn < kTurns - 1 ? kReplyTokens : kLastReplyTokens; }

RequestParams greedy(std::uint32_t tokens) {
    RequestParams p;
    p.max_new_tokens = tokens;
    p.ignore_eos = true; // random weights: every reply takes its whole length
    return p;
}

// What one turn did at the context's edge, in either front end.
struct Edge {
    bool answered = false;
    std::uint32_t dropped = 0;
    std::uint32_t limit = 0;
    std::string reply;
};

// A client's history as the app's chat panel keeps it: the dropped oldest
// messages go for good, then the turn and its reply join.
void keep(std::vector<ChatMessage>& history, const Edge& e, const std::string& user) {
    history.erase(history.begin(), history.begin() + std::min<std::ptrdiff_t>(e.dropped, std::ssize(history)));
    history.push_back({"user", user});
    history.push_back({"assistant", e.reply});
}

std::vector<ChatMessage> withSystem(const std::vector<ChatMessage>& history, const std::string& user) {
    std::vector<ChatMessage> all{{"system", kSystem}};
    all.insert(all.end(), history.begin(), history.end());
    all.push_back({"user", user});
    return all;
}

} // namespace

class TestChatContextEdge : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void theAppAndTheServerBehaveAlikeAtTheEdge();

private:
    std::vector<Edge> throughTheApp();
    std::vector<Edge> throughTheServer();

    QTemporaryDir dir_;
    QString model_;
};

void TestChatContextEdge::initTestCase() {
    QVERIFY(dir_.isValid());
    model_ = dir_.filePath(QStringLiteral("llama-15m-chatml.gguf"));
    write_synthetic_model(find_model_preset("llama-15m"), GgmlType::Q4_0, 1, model_.toStdString(), kChatml);
}

// As the app sends them: the whole history each turn, the controller
// keeping the chat's ids token-exact between turns.
std::vector<Edge> TestChatContextEdge::throughTheApp() {
    EngineThread engine;
    QSignalSpy loaded(engine.controller(), &EngineController::modelLoaded);
    QSignalSpy finished(engine.controller(), &EngineController::chatFinished);
    QString text;
    connect(engine.controller(), &EngineController::chatText, this, [&text](int, const QString& t) { text += t; });
    engine.loadModel(ModelSource::file(model_));
    if (!test::arrives(loaded, 1))
        return {};
    std::vector<Edge> edges;
    std::vector<ChatMessage> history;
    for (int turn = 0; turn < kTurns; ++turn) {
        text.clear();
        ChatTurn t{1, withSystem(history, userMessage(turn)), greedy(replyTokens(turn))};
        engine.submitChat(t);
        if (!test::arrives(finished, turn + 1))
            return edges;
        const auto stats = finished.last().at(0).value<TurnStats>();
        // The reply's text arrives before its stats (queued, in order).
        Edge e{stats.finish != FinishReason::Error, stats.dropped_messages, stats.reply_limit, text.toStdString()};
        edges.push_back(e);
        keep(history, e, userMessage(turn));
    }
    return edges;
}

// As an OpenAI client sends them: the whole history each request; it
// leaves out what the response says the server left out.
std::vector<Edge> TestChatContextEdge::throughTheServer() {
    auto model = std::make_shared<const Model>(model_.toStdString());
    EngineService service(EngineController::defaultConfig(), model);
    const ChatTemplate chatTemplate = ChatTemplate::for_model(model->file(), service.tokenizer());
    const serve::ServedModel served{"chat", model->config().context_length, model->config().context_length,
                                    &service.tokenizer(), &chatTemplate};
    std::vector<Edge> edges;
    std::vector<ChatMessage> history;
    for (int turn = 0; turn < kTurns; ++turn) {
        json messages = json::array();
        for (const ChatMessage& m : withSystem(history, userMessage(turn)))
            messages.push_back({{"role", m.role}, {"content", m.content}});
        const json body = {{"messages", messages}, {"max_tokens", replyTokens(turn)}, {"temperature", 0},
                           {"ignore_eos", true}};
        const serve::GenerationRequest request = serve::parse_chat_request(body, served);
        Submitted sent = service.submit(request.prompt, request.params);
        Edge e{sent.handle != nullptr, request.dropped_messages, request.reply_limit, {}};
        for (bool done = !sent.handle; !done;)
            if (const auto out = sent.handle->next(test::kPatience)) {
                e.reply += out->text;
                done = out->finish.has_value();
                e.answered = e.answered && out->finish != FinishReason::Error;
            }
        edges.push_back(e);
        keep(history, e, userMessage(turn));
    }
    return edges;
}

void TestChatContextEdge::theAppAndTheServerBehaveAlikeAtTheEdge() {
    const std::vector<Edge> app = throughTheApp();
    const std::vector<Edge> server = throughTheServer();
    QCOMPARE(app.size(), std::size_t(kTurns));
    QCOMPARE(server.size(), std::size_t(kTurns));
    std::optional<int> appFirstDrop, serverFirstDrop;
    for (int turn = 0; turn < kTurns; ++turn) {
        const Edge& a = app[static_cast<std::size_t>(turn)];
        const Edge& s = server[static_cast<std::size_t>(turn)];
        const QByteArray where = QByteArray("turn ") + QByteArray::number(turn + 1);
        QVERIFY2(a.answered && s.answered, where.constData()); // neither refuses a turn at the edge
        QVERIFY2(a.dropped % 2 == 0 && s.dropped % 2 == 0, where.constData()); // whole exchanges
        if (a.dropped && !appFirstDrop)
            appFirstDrop = turn;
        if (s.dropped && !serverFirstDrop)
            serverFirstDrop = turn;
        if (turn < kTurns - 1) {
            QVERIFY2(a.limit == 0 && s.limit == 0, where.constData()); // short turns: room enough
            continue;
        }
        // The last, long turn: its reply limited to the room left (and
        // said so: TurnStats and kvscope_context carry the limit that
        // engine/chat's one reply_limit_note words).
        QVERIFY2(a.limit > 0 && a.limit < kLastReplyTokens, where.constData());
        QVERIFY2(s.limit > 0 && s.limit < kLastReplyTokens, where.constData());
    }
    // Both reached the edge and left the oldest exchanges out, at the same
    // turn give or take one: the app counts each reply by the ids it
    // sampled, the server by the ids its text gives.
    QVERIFY(appFirstDrop && serverFirstDrop);
    qInfo("first drop: app turn %d, server turn %d; last turn's reply limit: app %u, server %u tokens",
          *appFirstDrop + 1, *serverFirstDrop + 1, app.back().limit, server.back().limit);
    QVERIFY2(std::abs(*appFirstDrop - *serverFirstDrop) <= 1,
             qPrintable(QStringLiteral("first drop: app turn %1, server turn %2")
                            .arg(*appFirstDrop + 1)
                            .arg(*serverFirstDrop + 1)));
}

QTEST_MAIN(TestChatContextEdge)
#include "test_chat_context_edge.moc"

// kvscope-cli chat: a terminal conversation with a model through its chat
// template. Each line read from standard input is a user message; the reply
// streams to standard output. The conversation is a ChatSession (engine/chat):
// token ids, each reply as it was sampled, on one Engine whose prefix cache
// serves the earlier turns from their blocks, and the context policy every
// front end shares: the oldest exchanges are left out, then the reply is
// limited to the room left, and both are said on stderr; only a message that
// alone fills the context is refused. End of input ends the chat. A
// reasoning model's reasoning (gpt-oss's analysis channel, Qwen3's <think>)
// streams to stderr, apart from the answer on stdout.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/chat/chat_session.h"
#include "engine/chat/reasoning_split.h"
#include "engine/completion.h"
#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope::cli {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The reply as it streams, leading whitespace held back under a template
// (its text starts after the assistant header).
class ReplyPrinter {
public:
    explicit ReplyPrinter(bool started) : started_(started) {}
    void print(std::string piece) {
        if (!started_) {
            std::size_t skip = 0;
            while (skip < piece.size() && is_space(piece[skip]))
                ++skip;
            piece.erase(0, skip);
            started_ = !piece.empty();
        }
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
    }

private:
    bool started_;
};

// A reply's reasoning on stderr (dimmed on a terminal), opened by
// "[reasoning] " and closed by a newline before the answer.
class ReasoningPrinter {
public:
    void print(const std::string& text) {
        if (text.empty())
            return;
        if (!open_)
            std::fputs(dim_ ? "\033[2m[reasoning] " : "[reasoning] ", stderr);
        open_ = true;
        std::fputs(text.c_str(), stderr);
        std::fflush(stderr);
    }
    void close() {
        if (open_)
            std::fputs(dim_ ? "\033[0m\n" : "\n", stderr);
        open_ = false;
    }

private:
    bool dim_ = isatty(STDERR_FILENO) != 0;
    bool open_ = false;
};

} // namespace

int run_chat(Args& args) {
    const std::string path = required_model_path(args);
    const auto system = args.value("--system");
    const GenerateSettings g = read_generate_settings(args, 256);
    args.finish();

    const auto model = std::make_shared<const Model>(path);
    const std::size_t context = model->config().context_length;
    // One engine (on CUDA: one weight upload) for the whole chat, its pool
    // as large as the context (host pages cost memory only once used).
    const EngineConfig config = context > 0 ? config_for_one_request(g.engine, model->config(), context) : g.engine;
    Engine engine(config, model);
    const Tokenizer& tokenizer = engine.tokenizer();
    const ChatTemplate chat = ChatTemplate::for_model(model->file(), tokenizer);
    const bool interactive = isatty(STDIN_FILENO) != 0;

    std::fprintf(stderr, "[chat template: %s]\n", chat.description().c_str());
    if (!chat.supported())
        std::fprintf(stderr,
                     "kvscope-cli chat: notice: no chat template kvscope knows, so this is plain "
                     "completion: each line you type is added to the text and the model continues it.\n");
    if (interactive)
        std::fprintf(stderr, "[type a message and press Enter; /reset forgets the conversation; "
                             "Ctrl-D ends]\n");

    const ReasoningMode reasoning = reasoning_mode(chat);
    ChatSession session(TurnEncoder::through(chat, tokenizer), context, system);
    std::string line;
    while (true) {
        if (interactive) {
            std::fputs("> ", stdout);
            std::fflush(stdout);
        }
        if (!std::getline(std::cin, line))
            break;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty())
            continue;
        if (line == "/reset") {
            session.reset();
            std::fprintf(stderr, "[conversation forgotten]\n");
            continue;
        }
        TurnPlan plan;
        try {
            plan = session.plan_turn(line, g.request.max_new_tokens);
        } catch (const Error& e) { // the message alone fills the context: the chat goes on without it
            std::fprintf(stderr, "kvscope-cli chat: %s\n", e.what());
            continue;
        }
        RequestParams params = g.request;
        params.max_new_tokens = plan.max_new_tokens;
        const std::size_t prompt_tokens = plan.prompt.size();

        ReplyPrinter printer(!chat.supported()); // templates: no leading spaces on screen
        ReasoningPrinter thoughts;
        ReasoningSplitter splitter(reasoning);
        const auto show = [&](const ReasoningText& part) {
            thoughts.print(part.reasoning);
            if (!part.content.empty()) {
                thoughts.close();
                printer.print(part.content);
            }
        };
        Completion r;
        try {
            r = run_to_completion(engine, std::move(plan.prompt), params,
                                  [&](const RequestOutput& out) { show(splitter.push(out.text)); });
            show(splitter.finish());
            thoughts.close();
        } catch (const Error& e) { // the engine refused or failed the turn: it never happened
            if (engine.has_work())
                throw; // the engine is stuck: the chat cannot go on
            std::fputs("\n", stdout);
            std::fflush(stdout);
            std::fprintf(stderr, "kvscope-cli chat: %s\n", e.what());
            session.drop_last();
            continue;
        }
        std::fputs("\n", stdout);
        std::fflush(stdout);
        const double decode_tps = r.decode_seconds > 0 && r.tokens.size() > 1
                                      ? static_cast<double>(r.tokens.size() - 1) / r.decode_seconds
                                      : 0.0;
        std::fprintf(stderr, "[%zu prompt tokens, %zu generated at %.1f tok/s%s]\n", prompt_tokens, r.tokens.size(),
                     decode_tps, r.finish == FinishReason::Stop ? "" : ", length limit");
        // What the context policy did, in the app's words.
        for (const std::string& note :
             {dropped_messages_note(plan.dropped_messages), reply_limit_note(plan.reply_limit)})
            if (!note.empty())
                std::fprintf(stderr, "[%s]\n", note.c_str());
        session.add_reply(r.tokens, r.text);
    }
    if (interactive)
        std::fputs("\n", stdout);
    return 0;
}

} // namespace kvscope::cli

// kvscope-cli chat: a terminal conversation with a model through its chat
// template. Each line read from standard input is a user message; the reply
// streams to standard output. The conversation is kept as token ids, each
// reply as it was sampled (engine/chat: oldest turns are dropped when it no
// longer fits the context), on one Engine whose prefix cache serves the
// earlier turns from their blocks. End of input ends the chat.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/chat/conversation.h"
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
    const EngineConfig config = context > 0 ? config_for_one_request(g.engine, context) : g.engine;
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

    Conversation conversation(system);
    const TurnEncoder encoder = TurnEncoder::through(chat, tokenizer);
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
            conversation.reset();
            std::fprintf(stderr, "[conversation forgotten]\n");
            continue;
        }
        conversation.add_user(line, encoder);
        const std::uint32_t max_new = g.request.max_new_tokens;
        const std::vector<TokenId> prompt = conversation.prompt_within(context, max_new, encoder);
        if (context > 0 && prompt.size() + max_new > context) {
            std::fprintf(stderr,
                         "kvscope-cli chat: the message takes %zu tokens; with -n %u that exceeds the "
                         "context of %zu tokens\n",
                         prompt.size(), max_new, context);
            conversation.drop_last();
            continue;
        }

        ReplyPrinter printer(!chat.supported()); // templates: no leading spaces on screen
        const Completion r =
            run_to_completion(engine, prompt, g.request, [&](const RequestOutput& out) { printer.print(out.text); });
        std::fputs("\n", stdout);
        std::fflush(stdout);
        const double decode_tps = r.decode_seconds > 0 && r.tokens.size() > 1
                                      ? static_cast<double>(r.tokens.size() - 1) / r.decode_seconds
                                      : 0.0;
        std::fprintf(stderr, "[%zu prompt tokens, %zu generated at %.1f tok/s%s]\n", prompt.size(), r.tokens.size(),
                     decode_tps, r.finish == FinishReason::Stop ? "" : ", length limit");
        conversation.add_reply(r.tokens, r.text);
    }
    if (interactive)
        std::fputs("\n", stdout);
    return 0;
}

} // namespace kvscope::cli

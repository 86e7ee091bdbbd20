// kvscope-cli chat: a terminal conversation with a model through its chat
// template. Each line read from standard input is a user message; the reply
// streams to standard output. The whole conversation is kept and rendered
// again for every turn (oldest turns are dropped when it no longer fits the
// context). End of input ends the chat.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/cli/commands.h"
#include "app/cli/model_options.h"
#include "engine/core/error.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/stream_decoder.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope::cli {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

} // namespace

int run_chat(Args& args) {
    const std::string path = required_model_path(args);
    const auto system = args.value("--system");
    GenerateOptions o = read_generate_options(args, 256);
    args.finish();

    const Model model(path);
    const Tokenizer tokenizer(read_vocabulary(model.file()));
    const ChatTemplate chat = ChatTemplate::for_model(model.file(), tokenizer);
    o.stop_tokens = tokenizer.stop_tokens();
    Generator generator(model, o); // one forward pass (on CUDA: one weight upload) for the whole chat
    const std::size_t context = model.config().context_length;
    const bool interactive = isatty(STDIN_FILENO) != 0;

    std::fprintf(stderr, "[chat template: %s]\n", chat.description().c_str());
    if (!chat.supported())
        std::fprintf(stderr,
                     "kvscope-cli chat: notice: no chat template kvscope knows, so this is plain "
                     "completion: each line you type is added to the text and the model continues it.\n");
    if (interactive)
        std::fprintf(stderr, "[type a message and press Enter; /reset forgets the conversation; "
                             "Ctrl-D ends]\n");

    std::vector<ChatMessage> messages;
    if (system)
        messages.push_back({"system", *system});
    const std::size_t kept = messages.size(); // never dropped

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
            messages.resize(kept);
            std::fprintf(stderr, "[conversation forgotten]\n");
            continue;
        }
        messages.push_back({"user", line});

        // Render; while the prompt and the reply do not fit the context,
        // forget the oldest exchange (a user message and its reply; the
        // system message stays).
        std::vector<TokenId> prompt;
        while (true) {
            prompt = chat.encode(tokenizer, chat.render(messages));
            if (context == 0 || prompt.size() + o.max_new_tokens <= context || messages.size() < kept + 3)
                break;
            const auto first = messages.begin() + static_cast<std::ptrdiff_t>(kept);
            messages.erase(first, first + 2);
        }
        if (context > 0 && prompt.size() + o.max_new_tokens > context) {
            std::fprintf(stderr,
                         "kvscope-cli chat: the message takes %zu tokens; with -n %u that exceeds the "
                         "context of %zu tokens\n",
                         prompt.size(), o.max_new_tokens, context);
            messages.pop_back();
            continue;
        }

        StreamDecoder decoder(tokenizer);
        std::string reply;
        bool started = !chat.supported(); // templates: no leading spaces on screen
        o.on_token = [&](TokenId id) {
            if (tokenizer.is_stop_token(id))
                return true;
            std::string piece = decoder.push(id);
            reply += piece;
            if (!started) {
                std::size_t skip = 0;
                while (skip < piece.size() && is_space(piece[skip]))
                    ++skip;
                piece.erase(0, skip);
                started = !piece.empty();
            }
            std::fputs(piece.c_str(), stdout);
            std::fflush(stdout);
            return true;
        };
        const GenerateResult r = generator.run(prompt, o);
        const std::string tail = decoder.flush();
        reply += tail;
        std::fputs(tail.c_str(), stdout);
        std::fputs("\n", stdout);
        std::fflush(stdout);
        const double decode_tps = r.decode_seconds > 0 && r.tokens.size() > 1
                                      ? static_cast<double>(r.tokens.size() - 1) / r.decode_seconds
                                      : 0.0;
        std::fprintf(stderr, "[%zu prompt tokens, %zu generated at %.1f tok/s%s]\n", prompt.size(), r.tokens.size(),
                     decode_tps,
                     !r.tokens.empty() && tokenizer.is_stop_token(r.tokens.back()) ? "" : ", length limit");
        messages.push_back({"assistant", chat.supported() ? strip_whitespace(reply) : reply});
    }
    if (interactive)
        std::fputs("\n", stdout);
    return 0;
}

} // namespace kvscope::cli

// Chat-template rendering on arbitrary template texts and conversations:
// the text is parsed and run as Jinja (minja), or falls back to the family
// recognised from it (seeded in corpus/chat_template with each family's
// marker strings), then an arbitrary conversation is rendered. Rendering
// either gives a string or throws kvscope::Error (the conversation the
// template refuses, or its failure); the text a built-in family renderer
// gives contains every user message's content, stripped or not.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"
#include "fuzz_support.h"

namespace {

using kvscope::ChatMessage;
using kvscope::fuzz::require;

constexpr std::size_t kMaxMessages = 8;

std::string role(FuzzedDataProvider& in) {
    switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: return "system";
    case 1: return "user";
    case 2: return "assistant";
    default: return in.ConsumeRandomLengthString(16); // a role no template knows
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    std::string source = in.ConsumeRandomLengthString(2048);
    std::string bos = in.ConsumeRandomLengthString(16);
    std::string eos = in.ConsumeRandomLengthString(16);
    const kvscope::ChatTemplate chat(std::move(source), std::move(bos), std::move(eos));
    kvscope::ChatRenderOptions options;
    options.add_generation_prompt = in.ConsumeBool();
    options.date = in.ConsumeRandomLengthString(16);
    std::vector<ChatMessage> messages(in.ConsumeIntegralInRange<std::size_t>(0, kMaxMessages));
    for (ChatMessage& m : messages) {
        m.role = role(in);
        m.content = in.ConsumeRandomLengthString(128);
    }
    chat.description();
    try {
        const std::string text = chat.render(messages, options);
        if (chat.renderer() == kvscope::ChatRenderer::builtin)
            for (const ChatMessage& m : messages)
                if (m.role == "user")
                    require(text.find(kvscope::strip_whitespace(m.content)) != std::string::npos,
                            "a user message's text is in the rendered conversation");
    } catch (const kvscope::Error&) {
        // The template refuses this conversation (roles out of order).
    }
    return 0;
}

#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <QMetaType>

#include "engine/engine.h"
#include "engine/tokenizer/chat_template.h"

namespace kvscope::ui {

// One chat turn sent to the engine: the whole conversation so far as text
// (system prompt first, the new user message last). The controller keeps
// each chat's conversation as token ids (engine/chat), its replies as they
// were sampled, and appends the new message to them, so the prefix cache
// serves the earlier turns from the blocks they left; the text is what a
// newly loaded model starts from. When the conversation outgrows the
// model's context, the oldest exchanges are left out (the system prompt
// stays) and TurnStats says how many messages went.
struct ChatTurn {
    int chat = 0;
    std::vector<ChatMessage> messages;
    RequestParams params;
};

// How a turn went, measured by the controller from submission to the end.
struct TurnStats {
    int chat = 0;
    std::uint32_t prompt_tokens = 0;
    std::uint32_t generated_tokens = 0;
    double ttft_s = 0;    // submission to first token
    double seconds = 0;   // submission to the end
    FinishReason finish = FinishReason::Stop;
    std::string error;    // with FinishReason::Error
    // The context was full: the oldest messages after the system prompt
    // (whole exchanges) left out of this turn's prompt, for good.
    std::uint32_t dropped_messages = 0;
    // The newest message left less room than max_new_tokens asked for: the
    // reply was limited to this many tokens (0: not limited).
    std::uint32_t reply_limit = 0;

    // Generation speed after the first token.
    double tokens_per_s() const {
        const double decode = seconds - ttft_s;
        return generated_tokens > 1 && decode > 0 ? (generated_tokens - 1) / decode : 0;
    }
};

} // namespace kvscope::ui

Q_DECLARE_METATYPE(kvscope::ui::ChatTurn)
Q_DECLARE_METATYPE(kvscope::ui::TurnStats)

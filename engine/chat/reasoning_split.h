// engine/chat: a reply's reasoning apart from its answer (README.md).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "engine/kv/kv_ids.h"

namespace kvscope {

class ChatTemplate;
class Tokenizer;

// How a model's replies carry their reasoning.
enum class ReasoningFormat : std::uint8_t {
    none, // the reply is all answer
    // gpt-oss's harmony messages, after the prompt's "<|start|>assistant":
    //   <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...
    // The analysis channel is reasoning; final and commentary (preambles a
    // user may see) are the answer; headers and markers are neither.
    harmony,
    // Qwen3, SmolLM3, DeepSeek-R1: <think>...</think> first, then the answer.
    think,
};

std::string_view to_string(ReasoningFormat format);

struct ReasoningMode {
    ReasoningFormat format = ReasoningFormat::none;
    // The prompt ends inside a <think> block (a generation prompt that opens
    // it, as Qwen3's thinking templates and DeepSeek-R1's write): the reply
    // starts with reasoning and only </think> ends it.
    bool opened = false;

    bool operator==(const ReasoningMode&) const = default;
};

// The format a template's replies take, from the markers its text writes:
// harmony for "<|channel|>" with "<|message|>", think for "</think>".
ReasoningFormat reasoning_format(const ChatTemplate& chat);

// The mode of a reply that continues `prompt_end`: the rendered prompt, or
// as much of its end as holds the generation prompt.
ReasoningMode reasoning_mode(ReasoningFormat format, std::string_view prompt_end);
// The same for a prompt as token ids (its last few decoded).
ReasoningMode reasoning_mode(const ChatTemplate& chat, const Tokenizer& tokenizer, std::span<const TokenId> prompt);
// The mode of every reply a conversation gets from `chat` without template
// arguments (a user message rendered with the generation prompt): the app's.
ReasoningMode reasoning_mode(const ChatTemplate& chat);

// Text split into its two parts.
struct ReasoningText {
    std::string reasoning;
    std::string content;

    bool empty() const { return reasoning.empty() && content.empty(); }
    ReasoningText& operator+=(const ReasoningText& more);
    bool operator==(const ReasoningText&) const = default;
};

// Splits a reply as it streams in, piece by piece (the text each sampled
// token adds). Text that may still turn out to be part of a marker
// ("<|en", "</th") waits for the next piece, so no marker reaches either
// part however the pieces cut it; finish() gives what waits at the end.
// The parts together are the reply less its markers, with the think
// format's reasoning trimmed of surrounding whitespace and its answer of
// the whitespace in front (as llama.cpp's parser does).
//
// A reply that does not follow its format is answer from where it departs
// (a think reply that does not open with <think>, a harmony reply that does
// not open with <|channel|>, or a harmony header without <|message|> within
// 256 bytes). With ReasoningFormat::none every piece is answer, unchanged.
class ReasoningSplitter {
public:
    explicit ReasoningSplitter(ReasoningMode mode = {});

    // What `piece` adds to each part.
    ReasoningText push(std::string_view piece);
    // The reply ended (a stop token, max_tokens, abort): what waited. An
    // unfinished marker of the harmony structure is dropped, other waiting
    // text goes to its part. The splitter takes no more pieces after it.
    ReasoningText finish();

private:
    enum class State : std::uint8_t {
        answer,        // everything is answer from here on
        think_start,   // whether the reply opens <think>
        thinking,      // inside <think>, until </think>
        after_think,   // whitespace between </think> and the answer
        header,        // a harmony header, until <|message|>
        body,          // a harmony message's text, until <|end|>
        between,       // after <|end|>, until <|start|>
    };

    // Moves what is decided from held_ into `out`; false when the rest
    // must wait for more text.
    bool step(ReasoningText& out);
    bool step_think_start();
    bool step_thinking(ReasoningText& out);
    bool step_header();
    bool step_body(ReasoningText& out);
    bool step_between();
    // The rest of the reply is answer, held_ first.
    void to_answer(ReasoningText& out);
    // Reasoning text of the think format: its leading whitespace dropped.
    void add_thought(ReasoningText& out, std::string_view text);

    State state_;
    std::string held_;             // text not yet given to a part
    bool body_is_reasoning_ = false; // body: the analysis channel's
    bool reply_start_ = true;      // header: the reply's first, with no role in front
    bool thought_started_ = false; // thinking: text already given to the reasoning
};

// A whole reply split at once (what pushing it in any pieces gives).
ReasoningText split_reasoning(std::string_view reply, ReasoningMode mode);

} // namespace kvscope

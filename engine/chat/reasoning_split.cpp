#include "engine/chat/reasoning_split.h"

#include <algorithm>
#include <vector>

#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace kvscope {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kAnalysis = "analysis";
// A harmony header ("assistant<|channel|>commentary to=functions.f
// <|constrain|>json") is short; past this it is not one.
constexpr std::size_t kMaxHeader = 256;
// Prompt tokens decoded to look for an opened <think>: its text and the
// whitespace after it, even spelt out byte by byte.
constexpr std::size_t kPromptTailTokens = 32;

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim_front(std::string_view text) {
    while (!text.empty() && is_space(text.front()))
        text.remove_prefix(1);
    return text;
}

std::size_t trailing_spaces(std::string_view text) {
    std::size_t n = 0;
    while (n < text.size() && is_space(text[text.size() - 1 - n]))
        ++n;
    return n;
}

// The longest end of `text` that a marker could still complete (a proper
// prefix of `marker`): it must wait for the next piece.
std::size_t partial_marker(std::string_view text, std::string_view marker) {
    for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
        if (marker.starts_with(text.substr(text.size() - n)))
            return n;
    return 0;
}

// `text` is a marker's start, or the marker and more.
enum class Prefix { no, partial, whole };
Prefix starts_with_marker(std::string_view text, std::string_view marker) {
    if (text.starts_with(marker))
        return Prefix::whole;
    return marker.starts_with(text) ? Prefix::partial : Prefix::no;
}

// The channel a harmony header names: the word after <|channel|>.
std::string_view header_channel(std::string_view header) {
    const std::size_t at = header.find(kChannel);
    if (at == std::string_view::npos)
        return {};
    const std::string_view rest = header.substr(at + kChannel.size());
    return rest.substr(0, rest.find_first_of(" <"));
}

} // namespace

std::string_view to_string(ReasoningFormat format) {
    switch (format) {
    case ReasoningFormat::none: return "none";
    case ReasoningFormat::harmony: return "harmony";
    case ReasoningFormat::think: return "think";
    }
    return "?";
}

ReasoningFormat reasoning_format(const ChatTemplate& chat) {
    const std::string_view source = chat.source();
    if (contains(source, kChannel) && contains(source, kMessage))
        return ReasoningFormat::harmony;
    if (contains(source, kThinkClose))
        return ReasoningFormat::think;
    return ReasoningFormat::none;
}

ReasoningMode reasoning_mode(ReasoningFormat format, std::string_view prompt_end) {
    if (format != ReasoningFormat::think)
        return {format, false};
    const std::string_view open = prompt_end.substr(0, prompt_end.size() - trailing_spaces(prompt_end));
    return {format, open.ends_with(kThinkOpen)};
}

ReasoningMode reasoning_mode(const ChatTemplate& chat, const Tokenizer& tokenizer, std::span<const TokenId> prompt) {
    const std::span<const TokenId> tail = prompt.last(std::min(prompt.size(), kPromptTailTokens));
    return reasoning_mode(reasoning_format(chat), tokenizer.decode(tail, {.keep_leading_space = true, .render_special = true}));
}

ReasoningMode reasoning_mode(const ChatTemplate& chat) {
    const ReasoningFormat format = reasoning_format(chat);
    if (format != ReasoningFormat::think)
        return {format, false};
    const std::vector<ChatMessage> probe{{"user", "Hello"}};
    try {
        return reasoning_mode(format, chat.render(probe));
    } catch (const std::exception&) {
        return {format, false}; // a template that refuses the probe: the reply says
    }
}

ReasoningText& ReasoningText::operator+=(const ReasoningText& more) {
    reasoning += more.reasoning;
    content += more.content;
    return *this;
}

ReasoningSplitter::ReasoningSplitter(ReasoningMode mode) {
    switch (mode.format) {
    case ReasoningFormat::none: state_ = State::answer; break;
    case ReasoningFormat::harmony: state_ = State::header; break;
    case ReasoningFormat::think: state_ = mode.opened ? State::thinking : State::think_start; break;
    }
}

ReasoningText ReasoningSplitter::push(std::string_view piece) {
    ReasoningText out;
    if (state_ == State::answer) {
        out.content = piece;
        return out;
    }
    held_ += piece;
    while (step(out)) {
    }
    return out;
}

bool ReasoningSplitter::step(ReasoningText& out) {
    switch (state_) {
    case State::answer: to_answer(out); return false;
    case State::think_start: return step_think_start();
    case State::thinking: return step_thinking(out);
    case State::after_think: {
        const std::string_view rest = trim_front(held_);
        if (rest.empty()) {
            held_.clear();
            return false;
        }
        held_ = std::string(rest);
        state_ = State::answer;
        return true;
    }
    case State::header: return step_header();
    case State::body: return step_body(out);
    case State::between: return step_between();
    }
    return false;
}

bool ReasoningSplitter::step_think_start() {
    const std::string_view text = trim_front(held_);
    if (text.empty())
        return false;
    switch (starts_with_marker(text, kThinkOpen)) {
    case Prefix::partial: return false;
    case Prefix::no: state_ = State::answer; return true;
    case Prefix::whole: break;
    }
    held_ = std::string(text.substr(kThinkOpen.size()));
    state_ = State::thinking;
    return true;
}

// Whitespace before </think> is held too: it is dropped if </think> follows.
bool ReasoningSplitter::step_thinking(ReasoningText& out) {
    const std::string_view text = held_;
    if (const std::size_t end = text.find(kThinkClose); end != std::string_view::npos) {
        const std::string_view thought = text.substr(0, end);
        add_thought(out, thought.substr(0, thought.size() - trailing_spaces(thought)));
        held_ = std::string(text.substr(end + kThinkClose.size()));
        state_ = State::after_think;
        return true;
    }
    const std::size_t partial = partial_marker(text, kThinkClose);
    const std::string_view before = text.substr(0, text.size() - partial);
    const std::size_t keep = partial + trailing_spaces(before);
    add_thought(out, text.substr(0, text.size() - keep));
    held_.erase(0, text.size() - keep);
    return false;
}

void ReasoningSplitter::add_thought(ReasoningText& out, std::string_view text) {
    if (!thought_started_)
        text = trim_front(text);
    thought_started_ = thought_started_ || !text.empty();
    out.reasoning += text;
}

bool ReasoningSplitter::step_header() {
    const std::string_view text = held_;
    if (reply_start_ && starts_with_marker(text, kChannel) == Prefix::no) {
        state_ = State::answer;
        return true;
    }
    const std::size_t message = text.find(kMessage);
    if (message == std::string_view::npos) {
        if (text.size() > kMaxHeader)
            state_ = State::answer;
        return state_ == State::answer;
    }
    body_is_reasoning_ = header_channel(text.substr(0, message)) == kAnalysis;
    held_ = std::string(text.substr(message + kMessage.size()));
    reply_start_ = false;
    state_ = State::body;
    return true;
}

bool ReasoningSplitter::step_body(ReasoningText& out) {
    const std::string_view text = held_;
    std::string& part = body_is_reasoning_ ? out.reasoning : out.content;
    if (const std::size_t end = text.find(kEnd); end != std::string_view::npos) {
        part += text.substr(0, end);
        held_ = std::string(text.substr(end + kEnd.size()));
        state_ = State::between;
        return true;
    }
    const std::size_t keep = partial_marker(text, kEnd);
    part += text.substr(0, text.size() - keep);
    held_.erase(0, text.size() - keep);
    return false;
}

bool ReasoningSplitter::step_between() {
    if (held_.empty())
        return false;
    switch (starts_with_marker(held_, kStart)) {
    case Prefix::partial: return false;
    case Prefix::no: state_ = State::answer; return true;
    case Prefix::whole: break;
    }
    held_.erase(0, kStart.size());
    state_ = State::header;
    return true;
}

void ReasoningSplitter::to_answer(ReasoningText& out) {
    out.content += held_;
    held_.clear();
}

ReasoningText ReasoningSplitter::finish() {
    ReasoningText out;
    switch (state_) {
    case State::answer:
    case State::think_start: to_answer(out); break;
    case State::thinking: add_thought(out, std::string_view(held_).substr(0, held_.size() - trailing_spaces(held_))); break;
    case State::body: (body_is_reasoning_ ? out.reasoning : out.content) += held_; break;
    case State::after_think:
    case State::header:
    case State::between: break; // whitespace, or a marker the reply did not finish
    }
    held_.clear();
    state_ = State::answer;
    return out;
}

ReasoningText split_reasoning(std::string_view reply, ReasoningMode mode) {
    ReasoningSplitter splitter(mode);
    ReasoningText text = splitter.push(reply);
    text += splitter.finish();
    return text;
}

} // namespace kvscope

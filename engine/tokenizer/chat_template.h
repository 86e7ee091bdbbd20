// engine/tokenizer: chat templates. A model's tokenizer.chat_template is a
// Jinja program, and kvscope runs it: the vendored minja engine (jinja/,
// README.md there) renders it as Hugging Face's apply_chat_template does
// (trim_blocks, lstrip_blocks, loop controls; raise_exception,
// strftime_now, tojson, namespace), with the variables `messages`
// ({role, content} each), `add_generation_prompt`, `bos_token` and
// `eos_token` (the vocabulary's), `tools` none, and the template arguments
// of ChatRenderOptions. tests/tokenizer/test_chat_template_jinja compares
// its renders with Python's jinja2 on real templates.
//
// Two adaptations, decided once by rendering probe conversations (as
// llama.cpp's minja chat_template does):
//   typed content   a template that reads a message's content only as a list
//                   of parts (Gemma 3-1B's system message) gets every content
//                   as [{"type": "text", "text": ...}]
//   system in user  a template that refuses a system message or leaves its
//                   text out (Gemma 2, Mistral v0.2) gets the system text in
//                   front of the first user message, then a blank line
//
// Where the template cannot run, the text decides:
//   no template     `plain`: the conversation becomes plain text for
//                   completion, and callers should say so to the user
//   a template minja rejects (a syntax it lacks) or that fails on a plain
//                   user/assistant/user conversation (no user text in its
//                   output, or an error): the built-in renderer of its family
//                   when the text is one of these, else `plain`:
//   llama2   <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] reply </s>
//   llama3   <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>;
//            Llama 3.1+ always opens with a system block holding
//            "Cutting Knowledge Date: December 2023" and "Today Date: ..."
//   chatml   <|im_start|>role\n...<|im_end|>\n (Qwen 2/2.5, SmolLM, Hermes), with
//            the template's default system prompt when it has one
//   mistral  [INST] user [/INST] reply</s> in its spellings (v1 " [INST] ",
//            v3 "[INST] ...[/INST]", tekken "[INST]...[/INST]", v7
//            [SYSTEM_PROMPT]); no system role: the system text goes in front
//            of the first user message (or the last one, where the template
//            puts it there), followed by "\n\n"
//   zephyr   <|user|>\n...</s>\n (Zephyr, TinyLlama chat)
//   gemma    <start_of_turn>user\n...<end_of_turn>\n, assistant as "model"; the
//            system text goes in front of the first user message (Gemma 3)
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

class GgufFile;
class Tokenizer;

struct ChatMessage {
    std::string role; // "system", "user", "assistant"
    std::string content;
    // An assistant message's reasoning, apart from its content (a client's
    // reasoning_content): given to a Jinja template as `reasoning_content`
    // (Qwen3's) and `thinking` (gpt-oss's) when not empty. The templates
    // decide what to write: both leave it out of turns before the last user
    // message.
    std::string reasoning{};
};

// The family a template's text looks like (marker strings such as
// "<|start_header_id|>"): named in description(), and the built-in
// renderer used where the template cannot run as Jinja.
enum class ChatFamily { none, llama2, llama3, chatml, mistral, zephyr, gemma };

std::string_view to_string(ChatFamily family);

// What renders a ChatTemplate's conversations.
enum class ChatRenderer {
    jinja,   // the model's template, run by minja
    builtin, // the family's renderer in C++: the template cannot run
    plain,   // no chat template: plain text for completion
};

std::string_view to_string(ChatRenderer renderer);

// The template's inputs beyond the conversation. The optional ones are
// passed to the template only when set, so that it uses its own default.
struct ChatRenderOptions {
    // Ends with the header of an assistant turn, for the model to continue.
    bool add_generation_prompt = true;
    // `date_string` (Llama 3.1+'s "Today Date"): empty leaves it undefined,
    // so the template uses its default ("26 Jul 2024", or strftime_now).
    std::string date;
    // `enable_thinking` (Qwen3, SmolLM3): false asks for an answer without
    // reasoning (Qwen3 writes an empty <think></think> after the
    // generation prompt); unset is the template's default (thinking on).
    std::optional<bool> enable_thinking;
    // `reasoning_effort` (gpt-oss: "low", "medium", "high"); empty: the
    // template's default.
    std::string reasoning_effort;
    // The instant strftime_now formats, in local time as Python's
    // datetime.now() (seconds since the epoch); unset: the clock's now.
    std::optional<std::time_t> now;
};

// tokenizer.chat_template, when the file has one.
std::optional<std::string> read_chat_template(const GgufFile& file);

// Python's str.strip() (Jinja's trim): Unicode whitespace at both ends.
std::string strip_whitespace(std::string_view text);

class ChatTemplate {
public:
    // `source`: the template text (empty: none). `bos` and `eos`: the text of
    // the BOS and EOS tokens ("<s>", "</s>"; empty when there are none), as
    // templates write them (bos_token, eos_token).
    ChatTemplate(std::string source, std::string bos, std::string eos);

    // The model's template, with its tokenizer's BOS and EOS text.
    static ChatTemplate for_model(const GgufFile& file, const Tokenizer& tokenizer);

    ChatRenderer renderer() const { return renderer_; }
    ChatFamily family() const { return family_; }
    // The template's text (empty: none).
    const std::string& source() const { return source_; }
    // A chat template renders the conversation (Jinja or built-in).
    bool supported() const { return renderer_ != ChatRenderer::plain; }
    // What renders, and why, for people, the family first: "llama3, the
    // model's Jinja template", "the model's Jinja template" (no family
    // kvscope knows), "llama3 (3.1+: ...), built-in renderer (the template
    // does not run as Jinja: ...)", "none (the model has no chat template)".
    std::string description() const;

    // The conversation as the template renders it. Throws kvscope::Error
    // where the template refuses the conversation (raise_exception: its own
    // words, e.g. Llama 2's and Mistral's "roles must alternate") or fails
    // on it; the built-in renderers refuse what their templates refuse.
    // `plain`: the system text and a blank line, then the messages' text, a
    // new user message on a new line.
    std::string render(std::span<const ChatMessage> messages,
                       const ChatRenderOptions& options = {}) const;

    // The ids of a rendered conversation: special tokens in it are parsed
    // (plain text for `plain`); BOS goes in front when the vocabulary adds
    // BOS and the text does not already start with it.
    std::vector<std::int32_t> encode(const Tokenizer& tokenizer, std::string_view rendered) const;

private:
    class Jinja; // the parsed template (minja stays out of this header)

    void recognise_family();
    // Why the parsed template cannot serve as a chat template (empty: it can),
    // and the adaptations it needs, from probe conversations.
    std::string probe_jinja();
    std::string render_jinja(std::span<const ChatMessage> m, const ChatRenderOptions& o) const;

    std::string render_builtin(std::span<const ChatMessage> m, const ChatRenderOptions& o) const;
    std::string render_llama2(std::span<const ChatMessage> m) const;
    std::string render_llama3(std::span<const ChatMessage> m, const ChatRenderOptions& o) const;
    std::string render_chatml(std::span<const ChatMessage> m, const ChatRenderOptions& o) const;
    std::string render_mistral(std::span<const ChatMessage> m) const;
    std::string render_zephyr(std::span<const ChatMessage> m, const ChatRenderOptions& o) const;
    std::string render_gemma(std::span<const ChatMessage> m, const ChatRenderOptions& o) const;
    std::string render_plain(std::span<const ChatMessage> m) const;

    std::string source_;
    std::string bos_;
    std::string eos_;
    ChatRenderer renderer_ = ChatRenderer::plain;
    ChatFamily family_ = ChatFamily::none;

    // jinja: the parsed template (shared: it is immutable) and its adaptations.
    std::shared_ptr<const Jinja> jinja_;
    bool typed_content_ = false;
    bool system_in_user_ = false;
    // builtin: why the template does not run as Jinja.
    std::string jinja_failure_;

    // Variants within a family, read from the template text.
    bool llama31_ = false;          // llama3: the dated system block
    bool llama3_strftime_ = false;  // llama3: the date is today's
    std::optional<std::string> default_system_; // chatml
    std::string inst_open_ = "[INST] ";         // mistral
    std::string inst_close_ = " [/INST]";
    std::string reply_prefix_;
    bool reply_trim_ = false;
    bool mistral_bos_ = true;
    enum class SystemPlace { first_user, last_user, own_block } system_place_ = SystemPlace::first_user;
    std::string system_open_ = "[SYSTEM_PROMPT] ";
};

} // namespace kvscope

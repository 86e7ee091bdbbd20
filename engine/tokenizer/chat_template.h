// engine/tokenizer: chat templates. A model's tokenizer.chat_template is a
// Jinja program; instead of running Jinja, the common families are
// recognised by their text and rendered in C++ to the exact string the
// template gives (Hugging Face's apply_chat_template: trim_blocks,
// lstrip_blocks, `trim` = Python's str.strip()):
//
//   llama2   Llama 2 chat: <s>[INST] <<SYS>>\nsys\n<</SYS>>\n\nuser [/INST] reply </s>
//   llama3   Llama 3 headers: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>;
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
//
// Any other template (or none) is `none`: the conversation becomes plain
// text for completion, and callers should say so to the user.
#pragma once

#include <cstdint>
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
};

enum class ChatFamily { none, llama2, llama3, chatml, mistral, zephyr, gemma };

std::string_view to_string(ChatFamily family);

struct ChatRenderOptions {
    // Ends with the header of an assistant turn, for the model to continue.
    bool add_generation_prompt = true;
    // Llama 3.1+'s "Today Date": empty means what the template does without
    // one ("26 Jul 2024", or today's date where it calls strftime_now).
    std::string date;
};

// tokenizer.chat_template, when the file has one.
std::optional<std::string> read_chat_template(const GgufFile& file);

// Python's str.strip() (Jinja's trim): Unicode whitespace at both ends.
std::string strip_whitespace(std::string_view text);

class ChatTemplate {
public:
    // `source`: the template text (empty: none). `bos` and `eos`: the text of
    // the BOS and EOS tokens ("<s>", "</s>"; empty when there are none), as
    // templates write them.
    ChatTemplate(std::string source, std::string bos, std::string eos);

    // The model's template, with its tokenizer's BOS and EOS text.
    static ChatTemplate for_model(const GgufFile& file, const Tokenizer& tokenizer);

    ChatFamily family() const { return family_; }
    bool supported() const { return family_ != ChatFamily::none; }
    // The family and the variant found, for people: "llama3 (3.1+, dated)".
    std::string description() const;

    // The conversation as the template renders it. Throws kvscope::Error
    // where the template itself would refuse the conversation (Llama 2,
    // Mistral and Gemma need user and assistant turns to alternate after an
    // optional first system message). `none`: the system text and a blank
    // line, then the messages' text, a new user message on a new line.
    std::string render(std::span<const ChatMessage> messages,
                       const ChatRenderOptions& options = {}) const;

    // The ids of a rendered conversation: special tokens in it are parsed
    // (plain text for `none`); BOS goes in front when the vocabulary adds
    // BOS and the text does not already start with it.
    std::vector<std::int32_t> encode(const Tokenizer& tokenizer, std::string_view rendered) const;

private:
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
    ChatFamily family_ = ChatFamily::none;

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

#include "engine/tokenizer/chat_template.h"

#include <ctime>
#include <stdexcept>

#include <minja/minja.hpp> // engine/tokenizer/jinja/, a system include: its warnings are not ours
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/model/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode_class.h"

namespace kvscope {
namespace {

bool contains(std::string_view text, std::string_view what) {
    return text.find(what) != std::string_view::npos;
}

// Python's str.isspace(): White_Space plus the separators U+001C..U+001F.
bool is_python_space(const unicode::Char& c) {
    return c.valid && ((unicode::flags(c.cp) & unicode::whitespace) || (c.cp >= 0x1C && c.cp <= 0x1F));
}

// A Jinja string literal's escapes: \n, \t, \r, \\, \', \".
std::string unescape(std::string_view literal) {
    std::string out;
    for (std::size_t i = 0; i < literal.size(); ++i) {
        if (literal[i] != '\\' || i + 1 == literal.size()) {
            out += literal[i];
            continue;
        }
        const char c = literal[++i];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    }
    return out;
}

// The literal system prompt a ChatML template writes when the conversation
// has none ('<|im_start|>system\nYou are Qwen, ...<|im_end|>\n'): the text
// between "<|im_start|>system" + newline and "<|im_end|>" that is all one
// string literal (no quote, brace or '+' inside).
std::optional<std::string> chatml_default_system(std::string_view source) {
    constexpr std::string_view kStart = "<|im_start|>system";
    for (std::size_t pos = source.find(kStart); pos != std::string_view::npos;
         pos = source.find(kStart, pos + 1)) {
        std::size_t p = pos + kStart.size();
        if (source.substr(p, 2) == "\\n")
            p += 2;
        else if (source.substr(p, 1) == "\n")
            p += 1;
        else
            continue;
        const std::size_t end = source.find("<|im_end|>", p);
        if (end == std::string_view::npos) break;
        const std::string_view literal = source.substr(p, end - p);
        if (literal.find_first_of("'\"{}+") == std::string_view::npos && !literal.empty())
            return unescape(literal);
    }
    return std::nullopt;
}

// ' ' + message / " " + message: a reply that starts with a space.
bool space_before_content(std::string_view source) {
    for (const std::string_view quote : {"' '", "\" \""}) {
        for (std::size_t pos = source.find(quote); pos != std::string_view::npos;
             pos = source.find(quote, pos + 1)) {
            std::size_t p = pos + quote.size();
            while (p < source.size() && source[p] == ' ') ++p;
            if (p < source.size() && source[p] == '+') {
                ++p;
                while (p < source.size() && source[p] == ' ') ++p;
                if (source.substr(p).starts_with("message")) return true;
            }
        }
    }
    return false;
}

[[noreturn]] void roles_must_alternate() {
    throw Error("the chat template needs user and assistant turns to alternate "
                "(user/assistant/user/...), after an optional first system message");
}

// loop_messages after an optional first system message, checked to
// alternate user/assistant starting with user, as Llama 2, Mistral and
// Gemma templates demand (raise_exception otherwise).
std::span<const ChatMessage> split_system(std::span<const ChatMessage> messages,
                                          const std::string** system) {
    *system = nullptr;
    if (!messages.empty() && messages[0].role == "system") {
        *system = &messages[0].content;
        messages = messages.subspan(1);
    }
    return messages;
}

void check_alternation(std::span<const ChatMessage> loop, bool only_user_and_assistant) {
    for (std::size_t i = 0; i < loop.size(); ++i) {
        if ((loop[i].role == "user") != (i % 2 == 0)) roles_must_alternate();
        if (only_user_and_assistant && loop[i].role != "user" && loop[i].role != "assistant")
            throw Error("the chat template supports only user and assistant roles, with an "
                        "optional first system message; got '" +
                        loop[i].role + "'");
    }
}

std::string today() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[32];
    std::strftime(text, sizeof text, "%d %b %Y", &local);
    return text;
}

// Text a probe conversation carries, to find in what the template writes.
constexpr std::string_view kProbeSystem = "kvscope probe: system";
constexpr std::string_view kProbeUser = "kvscope probe: user";
constexpr std::string_view kProbeReply = "kvscope probe: reply";

std::string first_line(std::string_view text) {
    return std::string(text.substr(0, text.find('\n')));
}

std::time_t local_strftime_input(const ChatRenderOptions& options) {
    return options.now ? *options.now : std::time(nullptr);
}

std::string format_time(std::time_t when, const std::string& format) {
    std::tm local{};
    localtime_r(&when, &local);
    char text[256];
    const std::size_t n = std::strftime(text, sizeof text, format.c_str(), &local);
    return std::string(text, n);
}

} // namespace

// The parsed template and its rendering, as Hugging Face's environment
// has it: trim_blocks and lstrip_blocks on, a single trailing newline of the
// template dropped (keep_trailing_newline off), raise_exception and
// strftime_now as globals (minja has tojson, namespace and the loop
// controls built in).
class ChatTemplate::Jinja {
public:
    // Throws std::exception (minja's) when the text does not parse.
    explicit Jinja(const std::string& source)
        : root_(minja::Parser::parse(source, {.trim_blocks = true, .lstrip_blocks = true,
                                              .keep_trailing_newline = false})) {}

    // `variables`: the template's globals, a JSON object. Throws
    // kvscope::Error: the template's raise_exception, or its failure.
    std::string render(const nlohmann::ordered_json& variables, std::time_t now) const {
        auto context = minja::Context::make(minja::Value(variables));
        // minja wraps every exception in another (with the template's line),
        // so what raise_exception said is kept aside.
        auto refusal = std::make_shared<std::optional<std::string>>();
        context->set("raise_exception",
                     minja::Value::callable([refusal](const std::shared_ptr<minja::Context>&, minja::ArgumentsValue& args) {
                         args.expectArgs("raise_exception", {1, 1}, {0, 0});
                         *refusal = args.args[0].to_str();
                         throw std::runtime_error(**refusal);
                         return minja::Value();
                     }));
        context->set("strftime_now",
                     minja::Value::callable([now](const std::shared_ptr<minja::Context>&, minja::ArgumentsValue& args) {
                         args.expectArgs("strftime_now", {1, 1}, {0, 0});
                         return minja::Value(format_time(now, args.args[0].get<std::string>()));
                     }));
        try {
            return root_->render(context);
        } catch (const std::exception& e) {
            if (*refusal)
                throw Error("the chat template refuses the conversation: " + **refusal);
            throw Error("the chat template failed: " + first_line(e.what()));
        }
    }

private:
    std::shared_ptr<minja::TemplateNode> root_;
};

std::string_view to_string(ChatRenderer renderer) {
    switch (renderer) {
    case ChatRenderer::jinja: return "jinja";
    case ChatRenderer::builtin: return "builtin";
    case ChatRenderer::plain: return "plain";
    }
    return "?";
}

std::string_view to_string(ChatFamily family) {
    switch (family) {
    case ChatFamily::none: return "none";
    case ChatFamily::llama2: return "llama2";
    case ChatFamily::llama3: return "llama3";
    case ChatFamily::chatml: return "chatml";
    case ChatFamily::mistral: return "mistral";
    case ChatFamily::zephyr: return "zephyr";
    case ChatFamily::gemma: return "gemma";
    }
    return "?";
}

std::optional<std::string> read_chat_template(const GgufFile& file) {
    return file.get_string("tokenizer.chat_template");
}

std::string strip_whitespace(std::string_view text) {
    std::size_t begin = 0;
    while (begin < text.size()) {
        const unicode::Char c = unicode::decode(text, begin);
        if (!is_python_space(c)) break;
        begin += c.length;
    }
    // From the front, remember where the last non-space character ends.
    std::size_t end = begin;
    for (std::size_t pos = begin; pos < text.size();) {
        const unicode::Char c = unicode::decode(text, pos);
        pos += c.length;
        if (!is_python_space(c)) end = pos;
    }
    return std::string(text.substr(begin, end - begin));
}

ChatTemplate::ChatTemplate(std::string source, std::string bos, std::string eos)
    : source_(std::move(source)), bos_(std::move(bos)), eos_(std::move(eos)) {
    recognise_family();
    if (source_.empty())
        return; // plain
    try {
        jinja_ = std::make_shared<const Jinja>(source_);
    } catch (const std::exception& e) {
        jinja_failure_ = "it does not parse: " + first_line(e.what());
    }
    if (jinja_)
        jinja_failure_ = probe_jinja();
    if (jinja_failure_.empty()) {
        renderer_ = ChatRenderer::jinja;
        return;
    }
    jinja_.reset();
    renderer_ = family_ != ChatFamily::none ? ChatRenderer::builtin : ChatRenderer::plain;
}

void ChatTemplate::recognise_family() {
    const std::string_view s = source_;
    if (contains(s, "<|start_header_id|>") && contains(s, "<|end_header_id|>")) {
        family_ = ChatFamily::llama3;
        llama31_ = contains(s, "Cutting Knowledge Date");
        llama3_strftime_ = contains(s, "strftime_now");
    } else if (contains(s, "<|im_start|>") && !contains(s, "<|im_sep|>")) {
        family_ = ChatFamily::chatml;
        default_system_ = chatml_default_system(s);
    } else if (contains(s, "<start_of_turn>")) {
        family_ = ChatFamily::gemma;
    } else if (contains(s, "[INST]") && contains(s, "<<SYS>>")) {
        family_ = ChatFamily::llama2;
    } else if (contains(s, "[INST]")) {
        family_ = ChatFamily::mistral;
        if (contains(s, "' [INST] '") || contains(s, "\" [INST] \""))
            inst_open_ = " [INST] ";
        else if (contains(s, "[INST] "))
            inst_open_ = "[INST] ";
        else
            inst_open_ = "[INST]";
        inst_close_ = contains(s, " [/INST]") ? " [/INST]" : "[/INST]";
        reply_prefix_ = space_before_content(s) ? " " : "";
        reply_trim_ = contains(s, "trim + eos_token") || contains(s, "trim+eos_token");
        mistral_bos_ = contains(s, "bos_token");
        if (contains(s, "[SYSTEM_PROMPT]")) {
            system_place_ = SystemPlace::own_block;
            system_open_ = contains(s, "[SYSTEM_PROMPT] ") ? "[SYSTEM_PROMPT] " : "[SYSTEM_PROMPT]";
        } else if (contains(s, "loop.last and system_message")) {
            system_place_ = SystemPlace::last_user;
        }
    } else if (contains(s, "<|user|>") && contains(s, "<|assistant|>") && contains(s, "eos_token") &&
               !contains(s, "<|end|>")) {
        family_ = ChatFamily::zephyr;
    }
}

std::string ChatTemplate::probe_jinja() {
    const std::vector<ChatMessage> turns{
        {"user", std::string(kProbeUser)}, {"assistant", std::string(kProbeReply)}, {"user", std::string(kProbeUser)}};
    try {
        if (render_jinja(turns, {}).find(kProbeUser) == std::string::npos)
            return "it leaves the user's message out";
    } catch (const Error& e) {
        return e.what();
    }
    // A system message: as text, as text parts, or in front of the user's.
    const std::vector<ChatMessage> with_system{{"system", std::string(kProbeSystem)}, {"user", std::string(kProbeUser)}};
    auto shows_system = [&] {
        try {
            return render_jinja(with_system, {}).find(kProbeSystem) != std::string::npos;
        } catch (const Error&) {
            return false;
        }
    };
    if (shows_system())
        return {};
    typed_content_ = true;
    if (shows_system())
        return {};
    typed_content_ = false;
    system_in_user_ = true;
    return {};
}

ChatTemplate ChatTemplate::for_model(const GgufFile& file, const Tokenizer& tokenizer) {
    auto text_of = [&](std::int32_t id) { return id >= 0 ? tokenizer.token_text(id) : std::string(); };
    return ChatTemplate(read_chat_template(file).value_or(std::string()), text_of(tokenizer.bos()),
                        text_of(tokenizer.eos()));
}

std::string ChatTemplate::description() const {
    std::string d(to_string(family_));
    switch (renderer_) {
    case ChatRenderer::plain:
        if (source_.empty())
            return "none (the model has no chat template)";
        return "none (the chat template does not run as Jinja: " + jinja_failure_ + ")";
    case ChatRenderer::jinja:
        d = family_ != ChatFamily::none ? d + ", the model's Jinja template" : "the model's Jinja template";
        if (typed_content_)
            d += ", content as text parts";
        if (system_in_user_)
            d += ", the system text in front of the first user message";
        return d;
    case ChatRenderer::builtin: break;
    }
    switch (family_) {
    case ChatFamily::llama3:
        if (llama31_) d += " (3.1+: system block with knowledge cutoff and date)";
        break;
    case ChatFamily::chatml:
        if (default_system_) d += " (default system prompt: \"" + *default_system_ + "\")";
        break;
    case ChatFamily::mistral:
        d += " (\"" + inst_open_ + "...\" \"" + inst_close_ + "\"; system ";
        d += system_place_ == SystemPlace::own_block   ? "prompt block)"
             : system_place_ == SystemPlace::last_user ? "text before the last user message)"
                                                       : "text before the first user message)";
        break;
    default: break;
    }
    return d + ", built-in renderer (the template does not run as Jinja: " + jinja_failure_ + ")";
}

std::string ChatTemplate::render(std::span<const ChatMessage> messages,
                                 const ChatRenderOptions& options) const {
    switch (renderer_) {
    case ChatRenderer::jinja: return render_jinja(messages, options);
    case ChatRenderer::builtin: return render_builtin(messages, options);
    case ChatRenderer::plain: break;
    }
    return render_plain(messages);
}

// Hugging Face passes the conversation, tools=None, add_generation_prompt,
// the special tokens and the caller's template arguments.
std::string ChatTemplate::render_jinja(std::span<const ChatMessage> messages,
                                       const ChatRenderOptions& options) const {
    using nlohmann::ordered_json;
    std::vector<ChatMessage> adapted(messages.begin(), messages.end());
    if (system_in_user_ && !adapted.empty() && adapted[0].role == "system") {
        const std::string system = adapted[0].content;
        adapted.erase(adapted.begin());
        for (ChatMessage& m : adapted)
            if (m.role == "user") {
                m.content = system + "\n\n" + m.content;
                break;
            }
    }
    ordered_json list = ordered_json::array();
    for (const ChatMessage& m : adapted) {
        ordered_json content = m.content;
        if (typed_content_)
            content = ordered_json::array({{{"type", "text"}, {"text", m.content}}});
        ordered_json message = {{"role", m.role}, {"content", std::move(content)}};
        if (!m.reasoning.empty()) { // as llama.cpp passes it: each template reads one of the names
            message["reasoning_content"] = m.reasoning;
            message["thinking"] = m.reasoning;
        }
        list.push_back(std::move(message));
    }
    ordered_json variables = {{"messages", std::move(list)},
                              {"tools", nullptr},
                              {"add_generation_prompt", options.add_generation_prompt},
                              {"bos_token", bos_},
                              {"eos_token", eos_}};
    if (!options.date.empty())
        variables["date_string"] = options.date;
    if (options.enable_thinking)
        variables["enable_thinking"] = *options.enable_thinking;
    if (!options.reasoning_effort.empty())
        variables["reasoning_effort"] = options.reasoning_effort;
    return jinja_->render(variables, local_strftime_input(options));
}

std::string ChatTemplate::render_builtin(std::span<const ChatMessage> messages,
                                         const ChatRenderOptions& options) const {
    switch (family_) {
    case ChatFamily::llama2: return render_llama2(messages);
    case ChatFamily::llama3: return render_llama3(messages, options);
    case ChatFamily::chatml: return render_chatml(messages, options);
    case ChatFamily::mistral: return render_mistral(messages);
    case ChatFamily::zephyr: return render_zephyr(messages, options);
    case ChatFamily::gemma: return render_gemma(messages, options);
    case ChatFamily::none: break;
    }
    return render_plain(messages);
}

// {% if messages[0]['role'] == 'system' %}...{% for message in loop_messages %}
// {% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n'
// + system_message + '\n<</SYS>>\n\n' + message['content'] %}...
// user: bos_token + '[INST] ' + content.strip() + ' [/INST]'
// assistant: ' ' + content.strip() + ' ' + eos_token
std::string ChatTemplate::render_llama2(std::span<const ChatMessage> messages) const {
    const std::string* system = nullptr;
    const auto loop = split_system(messages, &system);
    std::string out;
    for (std::size_t i = 0; i < loop.size(); ++i) {
        if ((loop[i].role == "user") != (i % 2 == 0)) roles_must_alternate();
        std::string content;
        if (i == 0 && system) {
            content.append("<<SYS>>\n").append(*system).append("\n<</SYS>>\n\n");
        }
        content.append(loop[i].content);
        if (loop[i].role == "user")
            out.append(bos_).append("[INST] ").append(strip_whitespace(content)).append(" [/INST]");
        else if (loop[i].role == "assistant")
            out.append(" ").append(strip_whitespace(content)).append(" ").append(eos_);
    }
    return out;
}

std::string ChatTemplate::render_llama3(std::span<const ChatMessage> messages,
                                        const ChatRenderOptions& options) const {
    auto turn = [](const ChatMessage& m) {
        return "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n" +
               strip_whitespace(m.content) + "<|eot_id|>";
    };
    std::string out;
    if (llama31_) {
        // Llama 3.1/3.2: the system block is always there.
        const std::string* system = nullptr;
        const auto rest = split_system(messages, &system);
        const std::string date = !options.date.empty() ? options.date
                                 : llama3_strftime_     ? today()
                                                        : "26 Jul 2024";
        out += bos_;
        out += "<|start_header_id|>system<|end_header_id|>\n\n";
        out += "Cutting Knowledge Date: December 2023\n";
        out += "Today Date: " + date + "\n\n";
        out += system ? strip_whitespace(*system) : std::string();
        out += "<|eot_id|>";
        for (const ChatMessage& m : rest) out += turn(m);
    } else {
        for (std::size_t i = 0; i < messages.size(); ++i) out += (i == 0 ? bos_ : "") + turn(messages[i]);
    }
    if (options.add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    return out;
}

std::string ChatTemplate::render_chatml(std::span<const ChatMessage> messages,
                                        const ChatRenderOptions& options) const {
    std::string out;
    if (default_system_ && (messages.empty() || messages[0].role != "system"))
        out += "<|im_start|>system\n" + *default_system_ + "<|im_end|>\n";
    for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

std::string ChatTemplate::render_mistral(std::span<const ChatMessage> messages) const {
    std::string out = mistral_bos_ ? bos_ : std::string();
    auto reply = [&](const ChatMessage& m) {
        return reply_prefix_ + (reply_trim_ ? strip_whitespace(m.content) : m.content) + eos_;
    };
    if (system_place_ == SystemPlace::own_block) {
        // v7: [SYSTEM_PROMPT] wherever a system message is.
        for (const ChatMessage& m : messages) {
            if (m.role == "user")
                out += inst_open_ + m.content + inst_close_;
            else if (m.role == "system")
                out += system_open_ + m.content + "[/SYSTEM_PROMPT]";
            else if (m.role == "assistant")
                out += reply(m);
            else
                throw Error("the chat template supports only user, system and assistant roles; got '" +
                            m.role + "'");
        }
        return out;
    }
    const std::string* system = nullptr;
    const auto loop = split_system(messages, &system);
    check_alternation(loop, true);
    for (std::size_t i = 0; i < loop.size(); ++i) {
        const ChatMessage& m = loop[i];
        if (m.role == "assistant") {
            out += reply(m);
            continue;
        }
        const bool with_system =
            system && (system_place_ == SystemPlace::last_user ? i + 1 == loop.size() : i == 0);
        out += inst_open_ + (with_system ? *system + "\n\n" : std::string()) + m.content + inst_close_;
    }
    return out;
}

// {% for message in messages %}\n{% if message['role'] == 'user' %}\n
// {{ '<|user|>\n' + message['content'] + eos_token }}\n ... {% if loop.last and
// add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}
// (trim_blocks drops the newline after each block tag, not after {{ }}).
std::string ChatTemplate::render_zephyr(std::span<const ChatMessage> messages,
                                        const ChatRenderOptions& options) const {
    std::string out;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "user" || m.role == "system" || m.role == "assistant")
            out += "<|" + m.role + "|>\n" + m.content + eos_ + "\n";
        if (i + 1 == messages.size() && options.add_generation_prompt) out += "<|assistant|>\n";
    }
    return out;
}

std::string ChatTemplate::render_gemma(std::span<const ChatMessage> messages,
                                       const ChatRenderOptions& options) const {
    const std::string* system = nullptr;
    const auto loop = split_system(messages, &system);
    check_alternation(loop, false);
    std::string out = contains(source_, "bos_token") ? bos_ : std::string();
    for (std::size_t i = 0; i < loop.size(); ++i) {
        const std::string role = loop[i].role == "assistant" ? "model" : loop[i].role;
        out += "<start_of_turn>" + role + "\n";
        if (i == 0 && system) out += *system + "\n\n";
        out += strip_whitespace(loop[i].content) + "<end_of_turn>\n";
    }
    if (options.add_generation_prompt) out += "<start_of_turn>model\n";
    return out;
}

std::string ChatTemplate::render_plain(std::span<const ChatMessage> messages) const {
    const std::string* system = nullptr;
    const auto rest = split_system(messages, &system);
    std::string out = system ? *system + "\n\n" : std::string();
    for (std::size_t i = 0; i < rest.size(); ++i) {
        if (i > 0 && rest[i].role == "user") out += "\n";
        out += rest[i].content;
    }
    return out;
}

std::vector<std::int32_t> ChatTemplate::encode(const Tokenizer& tokenizer,
                                               std::string_view rendered) const {
    if (!supported()) return tokenizer.encode(rendered);
    std::vector<std::int32_t> ids =
        tokenizer.encode(rendered, {.add_special = false, .parse_special = true});
    const bool has_bos = !bos_.empty() && rendered.starts_with(bos_);
    if (tokenizer.vocabulary().add_bos && tokenizer.bos() >= 0 && !has_bos)
        ids.insert(ids.begin(), tokenizer.bos());
    return ids;
}

} // namespace kvscope

// Chat templates: each family's real template text (as Hugging Face model
// repositories ship it) run as Jinja for one conversation, the expected
// strings written by hand from the templates' Jinja (with
// apply_chat_template's trim_blocks / lstrip_blocks), so they hold without
// Python too (test_chat_template_jinja compares with jinja2). The
// conversation and several expected strings agree with llama.cpp's
// tests/test-chat-template.cpp. Templates that cannot run fall back to the
// family's built-in renderer, which must give the same strings.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/tokenizer/chat_template.h"
#include "tokenizer_test_support.h"

using namespace kvscope;

namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
    {"assistant", "   I am an assistant   "},
    {"user", "Another question"},
};

// kConversation as plain text for completion.
const std::string kPlainConversation =
    "You are a helpful assistant\n\nHelloHi there\nWho are you   I am an assistant   \nAnother question";

std::vector<ChatMessage> without_system() {
    return std::vector<ChatMessage>(kConversation.begin() + 1, kConversation.end());
}

// meta-llama/Llama-2-7b-chat-hf
const char* kLlama2 =
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set "
    "system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set "
    "system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] "
    "== 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != "
    "false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + "
    "message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if "
    "message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif "
    "message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% "
    "endfor %}";

// meta-llama/Meta-Llama-3-8B-Instruct
const char* kLlama3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif "
    "%}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// meta-llama/Llama-3.1-8B-Instruct (the parts that matter without tools)
const char* kLlama31 =
    "{{- bos_token }}\n{%- if custom_tools is defined %}\n    {%- set tools = custom_tools %}\n"
    "{%- endif %}\n{%- if not date_string is defined %}\n    {%- set date_string = \"26 Jul "
    "2024\" %}\n{%- endif %}\n{%- if messages[0]['role'] == 'system' %}\n    {%- set "
    "system_message = messages[0]['content']|trim %}\n    {%- set messages = messages[1:] %}\n"
    "{%- else %}\n    {%- set system_message = \"\" %}\n{%- endif %}\n{{- "
    "\"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n{{- \"Cutting Knowledge Date: "
    "December 2023\\n\" }}\n{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n{{- "
    "system_message }}\n{{- \"<|eot_id|>\" }}\n{%- for message in messages %}\n        {{- "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
    "trim + '<|eot_id|>' }}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n{%- endif %}\n";

// Qwen/Qwen2.5-7B-Instruct (the branch without tools)
const char* kQwen25 =
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0]['role'] == "
    "'system' %}\n        {{- messages[0]['content'] }}\n    {%- else %}\n        {{- 'You are "
    "Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n    {%- endif %}\n{%- "
    "else %}\n    {%- if messages[0]['role'] == 'system' %}\n        {{- '<|im_start|>system\\n' + "
    "messages[0]['content'] + '<|im_end|>\\n' }}\n    {%- else %}\n        {{- "
    "'<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n    {%- endif %}\n{%- endif %}\n{%- for message in messages "
    "%}\n    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) "
    "or (message.role == \"assistant\" and not message.tool_calls) %}\n        {{- '<|im_start|>' "
    "+ message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n    {%- endif %}\n{%- "
    "endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif "
    "%}\n";

// HuggingFaceTB/SmolLM-1.7B-Instruct, teknium/OpenHermes-2.5-Mistral-7B
const char* kChatml =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' }}{% endif %}";

// mistralai/Mistral-7B-Instruct-v0.2 (original: no system role)
const char* kMistralOld =
    "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] "
    "' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ "
    "message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles "
    "are supported!') }}{% endif %}{% endfor %}";

// mistralai's "v1" template with a system prompt (Mistral-7B-Instruct-v0.1/v0.2 update)
const char* kMistralV1 =
    "{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = "
    "messages[0]['content'] %}\n    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    {%- "
    "set loop_messages = messages %}\n{%- endif %}\n\n{{- bos_token }}\n{%- for message in "
    "loop_messages %}\n    {%- if message['role'] == 'user' %}\n        {%- if loop.first and "
    "system_message is defined %}\n            {{- ' [INST] ' + system_message + '\\n\\n' + "
    "message['content'] + ' [/INST]' }}\n        {%- else %}\n            {{- ' [INST] ' + "
    "message['content'] + ' [/INST]' }}\n        {%- endif %}\n    {%- elif message['role'] == "
    "'assistant' %}\n        {{- ' ' + message['content'] + eos_token}}\n    {%- endif %}\n{%- "
    "endfor %}\n";

// mistralai "v3" (Mistral-7B-Instruct-v0.3, Mistral-Large-2407), tool parts left out
const char* kMistralV3 =
    "{%- if messages[0][\"role\"] == \"system\" %}\n    {%- set system_message = "
    "messages[0][\"content\"] %}\n    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    "
    "{%- set loop_messages = messages %}\n{%- endif %}\n{{- bos_token }}\n{%- for message in "
    "loop_messages %}\n    {%- if message[\"role\"] == \"user\" %}\n        {%- if loop.last and "
    "system_message is defined %}\n            {{- \"[INST] \" + system_message + \"\\n\\n\" + "
    "message[\"content\"] + \"[/INST]\" }}\n        {%- else %}\n            {{- \"[INST] \" + "
    "message[\"content\"] + \"[/INST]\" }}\n        {%- endif %}\n    {%- elif message[\"role\"] == "
    "\"assistant\" %}\n        {{- \" \" + message[\"content\"]|trim + eos_token}}\n    {%- endif "
    "%}\n{%- endfor %}\n";

// mistralai "v3-tekken" (Mistral-Nemo-Instruct-2407), tool parts left out
const char* kMistralTekken =
    "{%- if messages[0][\"role\"] == \"system\" %}\n    {%- set system_message = "
    "messages[0][\"content\"] %}\n    {%- set loop_messages = messages[1:] %}\n{%- else %}\n    "
    "{%- set loop_messages = messages %}\n{%- endif %}\n{{- bos_token }}\n{%- for message in "
    "loop_messages %}\n    {%- if message[\"role\"] == \"user\" %}\n        {%- if loop.last and "
    "system_message is defined %}\n            {{- \"[INST]\" + system_message + \"\\n\\n\" + "
    "message[\"content\"] + \"[/INST]\" }}\n        {%- else %}\n            {{- \"[INST]\" + "
    "message[\"content\"] + \"[/INST]\" }}\n        {%- endif %}\n    {%- elif message[\"role\"] == "
    "\"assistant\" %}\n        {{- message[\"content\"] + eos_token}}\n    {%- endif %}\n{%- endfor "
    "%}\n";

// mistralai "v7" (Mistral-Large-Instruct-2411)
const char* kMistralV7 =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + "
    "message['content'] + '[/INST]' }}{% elif message['role'] == 'system' %}{{ '[SYSTEM_PROMPT] ' + "
    "message['content'] + '[/SYSTEM_PROMPT]' }}{% elif message['role'] == 'assistant' %}{{ ' ' + "
    "message['content'] + eos_token }}{% else %}{{ raise_exception('Only user, system and "
    "assistant roles are supported!') }}{% endif %}{% endfor %}";

// HuggingFaceH4/zephyr-7b-beta, TinyLlama/TinyLlama-1.1B-Chat-v1.0
const char* kZephyr =
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
    "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + "
    "message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ "
    "'<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and "
    "add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";

// google/gemma-2-9b-it
const char* kGemma =
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not "
    "supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != "
    "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% "
    "set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ "
    "'<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor "
    "%}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";

ChatRenderOptions no_generation_prompt() {
    ChatRenderOptions o;
    o.add_generation_prompt = false;
    return o;
}

ChatRenderOptions dated(const char* date) {
    ChatRenderOptions o = no_generation_prompt();
    o.date = date;
    return o;
}

// What the built-in renderer of `source`'s family gives: the template's
// text made unparseable for minja (an unclosed block at the end), its
// marker strings kept.
ChatTemplate builtin(const std::string& source, const char* bos, const char* eos) {
    ChatTemplate t(source + "{% if", bos, eos);
    if (t.renderer() != ChatRenderer::builtin)
        throw Error("not a built-in renderer: " + t.description());
    return t;
}

// The template run as Jinja, then its family's built-in renderer: both
// must render every conversation alike.
std::vector<ChatTemplate> both(const std::string& source, const char* bos, const char* eos) {
    ChatTemplate jinja(source, bos, eos);
    if (jinja.renderer() != ChatRenderer::jinja)
        throw Error("does not run as Jinja: " + jinja.description());
    return {jinja, builtin(source, bos, eos)};
}

template <typename F>
QString error_of(F make) {
    try {
        make();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

class TestChatTemplate : public QObject {
    Q_OBJECT
private slots:
    void llama2();
    void llama3();
    void llama31_dated_system_block();
    void chatml_qwen_default_system();
    void chatml_plain();
    void mistral_without_system_role();
    void mistral_v1_v3_tekken_v7();
    void zephyr_tinyllama();
    void gemma();
    void no_template_is_plain_completion();
    void a_template_of_no_known_family_runs();
    void a_template_that_cannot_run_falls_back();
    void refuses_what_the_template_refuses();
    void strip_is_python_strip();
};

void TestChatTemplate::llama2() {
    for (const ChatTemplate& t : both(kLlama2, "<s>", "</s>")) {
        QCOMPARE(t.family(), ChatFamily::llama2);
        QCOMPARE(t.render(kConversation),
                 std::string("<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] "
                             "Hi there </s><s>[INST] Who are you [/INST] I am an assistant </s>"
                             "<s>[INST] Another question [/INST]"));
        // No system message: no <<SYS>> block; add_generation_prompt changes nothing.
        const std::vector<ChatMessage> one{{"user", " Hi! "}};
        QCOMPARE(t.render(one, no_generation_prompt()), std::string("<s>[INST] Hi! [/INST]"));
    }
}

void TestChatTemplate::llama3() {
    for (const ChatTemplate& t : both(kLlama3, "<|begin_of_text|>", "<|eot_id|>")) {
        QCOMPARE(t.family(), ChatFamily::llama3);
        QCOMPARE(t.render(kConversation),
                 std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a "
                             "helpful assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                             "Hello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi there"
                             "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\nI am an assistant<|eot_id|>"
                             "<|start_header_id|>user<|end_header_id|>\n\nAnother question<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\n"));
        const std::vector<ChatMessage> one{{"user", "Hi"}};
        QCOMPARE(t.render(one, no_generation_prompt()),
                 std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"));
    }
}

void TestChatTemplate::llama31_dated_system_block() {
    for (const ChatTemplate& t : both(kLlama31, "<|begin_of_text|>", "<|eot_id|>")) {
        QCOMPARE(t.family(), ChatFamily::llama3);
        const std::vector<ChatMessage> one{{"user", "Hi"}};
        QCOMPARE(t.render(one),
                 std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                             "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                             "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                             "<|start_header_id|>assistant<|end_header_id|>\n\n"));
        const std::vector<ChatMessage> with_system{{"system", " Be brief. "}, {"user", "Hi"}};
        QCOMPARE(t.render(with_system, dated("01 Jan 2025")),
                 std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                             "Cutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n"
                             "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"));
    }
}

void TestChatTemplate::chatml_qwen_default_system() {
    for (const ChatTemplate& t : both(kQwen25, "", "<|im_end|>")) {
        QCOMPARE(t.family(), ChatFamily::chatml);
        QCOMPARE(t.render(kConversation),
                 std::string("<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\n"
                             "Hello<|im_end|>\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\n"
                             "Who are you<|im_end|>\n<|im_start|>assistant\n   I am an assistant   "
                             "<|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n"
                             "<|im_start|>assistant\n"));
        const std::vector<ChatMessage> one{{"user", "Hi"}};
        QCOMPARE(t.render(one),
                 std::string("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
                             "helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                             "<|im_start|>assistant\n"));
    }
}

void TestChatTemplate::chatml_plain() {
    for (const ChatTemplate& t : both(kChatml, "<|im_start|>", "<|im_end|>")) {
        QCOMPARE(t.family(), ChatFamily::chatml);
        const std::vector<ChatMessage> two{{"user", "Hi"}, {"assistant", "Hello!"}};
        QCOMPARE(t.render(two, no_generation_prompt()),
                 std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"));
    }
}

void TestChatTemplate::mistral_without_system_role() {
    // The original template refuses a system message; the system text goes
    // in front of the first user message with a blank line, as Mistral's
    // later templates do.
    for (const ChatTemplate& t : both(kMistralOld, "<s>", "</s>")) {
        QCOMPARE(t.family(), ChatFamily::mistral);
        QCOMPARE(t.render(kConversation),
                 std::string("<s>[INST] You are a helpful assistant\n\nHello [/INST]Hi there</s>[INST] Who "
                             "are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]"));
        QCOMPARE(t.render(without_system()),
                 std::string("<s>[INST] Hello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an "
                             "assistant   </s>[INST] Another question [/INST]"));
    }
}

void TestChatTemplate::mistral_v1_v3_tekken_v7() {
    for (const ChatTemplate& t : both(kMistralV1, "<s>", "</s>"))
        QCOMPARE(t.render(kConversation),
             std::string("<s> [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] "
                         "Who are you [/INST]    I am an assistant   </s> [INST] Another question "
                         "[/INST]"));
    // v3 and tekken put the system text before the last message when that
    // is a user message.
    for (const ChatTemplate& t : both(kMistralV3, "<s>", "</s>"))
        QCOMPARE(t.render(kConversation),
             std::string("<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an "
                         "assistant</s>[INST] You are a helpful assistant\n\nAnother question[/INST]"));
    for (const ChatTemplate& t : both(kMistralTekken, "<s>", "</s>"))
        QCOMPARE(t.render(kConversation),
             std::string("<s>[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an "
                         "assistant   </s>[INST]You are a helpful assistant\n\nAnother "
                         "question[/INST]"));
    for (const ChatTemplate& t : both(kMistralV7, "<s>", "</s>"))
        QCOMPARE(t.render(kConversation),
             std::string("<s>[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] "
                         "Hello[/INST] Hi there</s>[INST] Who are you[/INST]    I am an assistant   "
                         "</s>[INST] Another question[/INST]"));
}

void TestChatTemplate::zephyr_tinyllama() {
    for (const ChatTemplate& t : both(kZephyr, "<s>", "</s>")) {
        QCOMPARE(t.family(), ChatFamily::zephyr);
        QCOMPARE(t.render(kConversation),
                 std::string("<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n"
                             "<|assistant|>\nHi there</s>\n<|user|>\nWho are you</s>\n<|assistant|>\n"
                             "   I am an assistant   </s>\n<|user|>\nAnother question</s>\n"
                             "<|assistant|>\n"));
    }
}

void TestChatTemplate::gemma() {
    for (const ChatTemplate& t : both(kGemma, "<bos>", "<eos>")) {
        QCOMPARE(t.family(), ChatFamily::gemma);
        QCOMPARE(t.render(kConversation),
                 std::string("<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
                             "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are "
                             "you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n"
                             "<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"));
    }
}

void TestChatTemplate::no_template_is_plain_completion() {
    const ChatTemplate t("", "<s>", "</s>");
    QCOMPARE(t.renderer(), ChatRenderer::plain);
    QCOMPARE(t.family(), ChatFamily::none);
    QVERIFY(!t.supported());
    QCOMPARE(t.description(), std::string("none (the model has no chat template)"));
    QCOMPARE(t.render(kConversation), kPlainConversation);
}

void TestChatTemplate::a_template_of_no_known_family_runs() {
    const ChatTemplate t("{% for m in messages %}[{{ m.role }}] {{ m.content | trim }}\n{% endfor %}", "<s>", "</s>");
    QCOMPARE(t.renderer(), ChatRenderer::jinja);
    QCOMPARE(t.family(), ChatFamily::none);
    QVERIFY(t.supported());
    QCOMPARE(t.description(), std::string("the model's Jinja template"));
    QCOMPARE(t.render(without_system()),
             std::string("[user] Hello\n[assistant] Hi there\n[user] Who are you\n[assistant] I am an "
                         "assistant\n[user] Another question\n"));
}

// A template minja rejects, or one that fails on (or leaves out) a plain
// user/assistant/user conversation: the family's built-in renderer where
// the text has one, else plain completion; the description says why.
void TestChatTemplate::a_template_that_cannot_run_falls_back() {
    const ChatTemplate unparsed(std::string(kChatml) + "{% if", "", "");
    QCOMPARE(unparsed.renderer(), ChatRenderer::builtin);
    QVERIFY2(unparsed.description().starts_with("chatml") &&
                 unparsed.description().find("does not run as Jinja: it does not parse") != std::string::npos,
             unparsed.description().c_str());
    QCOMPARE(unparsed.render(without_system()), ChatTemplate(kChatml, "", "").render(without_system()));

    const ChatTemplate failing("{{ '<|im_start|>' + message['role'] + '<|im_end|>' }}", "", "");
    QCOMPARE(failing.renderer(), ChatRenderer::builtin);
    QVERIFY2(failing.description().find("the chat template failed") != std::string::npos,
             failing.description().c_str());

    const ChatTemplate no_family("<|im_start|>user<|im_sep|>{{ message }}", "<s>", "</s>");
    QCOMPARE(no_family.renderer(), ChatRenderer::plain);
    QCOMPARE(no_family.description(),
             std::string("none (the chat template does not run as Jinja: it leaves the user's message out)"));
    QCOMPARE(no_family.render(kConversation), kPlainConversation);
}

void TestChatTemplate::refuses_what_the_template_refuses() {
    const std::vector<ChatMessage> two_users{{"user", "a"}, {"user", "b"}};
    for (const char* source : {kLlama2, kMistralOld, kGemma})
        for (const ChatTemplate& t : both(source, "<s>", "</s>")) {
            const QString why = error_of([&] { t.render(two_users); });
            QVERIFY2(why.contains("alternate"), qPrintable(why));
        }
    // Mistral's v1 template leaves other roles out; its built-in renderer,
    // which stands for every Mistral spelling, refuses them.
    const std::vector<ChatMessage> odd_role{{"user", "a"}, {"tool", "b"}};
    QCOMPARE(ChatTemplate(kMistralV1, "<s>", "</s>").render(odd_role), std::string("<s> [INST] a [/INST]"));
    QVERIFY(error_of([&] { builtin(kMistralV1, "<s>", "</s>").render(odd_role); })
                .contains("only user and assistant roles"));
    // ChatML and Llama 3 take any roles in any order.
    for (const char* source : {kChatml, kLlama3})
        for (const ChatTemplate& t : both(source, "", ""))
            QVERIFY(error_of([&] { t.render(two_users); }).isEmpty());
}

void TestChatTemplate::strip_is_python_strip() {
    QCOMPARE(strip_whitespace("  \t\n a b \r\n"), std::string("a b"));
    QCOMPARE(strip_whitespace("\xE3\x80\x80x\xC2\xA0"), std::string("x")); // U+3000, U+00A0
    QCOMPARE(strip_whitespace("\x1Fx\x1C"), std::string("x"));             // Python's isspace
    QCOMPARE(strip_whitespace("\xE2\x80\x8Bx"), std::string("\xE2\x80\x8Bx")); // U+200B is not
    QCOMPARE(strip_whitespace("   "), std::string());
}

QTEST_GUILESS_MAIN(TestChatTemplate)
#include "test_chat_template.moc"

// Chat templates: each family's real template text (as Hugging Face model
// repositories ship it) recognised and rendered for one conversation, the
// expected strings written by hand from the templates' Jinja (with
// apply_chat_template's trim_blocks / lstrip_blocks). The conversation and
// several expected strings agree with llama.cpp's tests/test-chat-template.cpp.
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
    void unknown_template_is_plain_completion();
    void refuses_what_the_template_refuses();
    void strip_is_python_strip();
};

void TestChatTemplate::llama2() {
    const ChatTemplate t(kLlama2, "<s>", "</s>");
    QCOMPARE(t.family(), ChatFamily::llama2);
    QCOMPARE(t.render(kConversation),
             std::string("<s>[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST] "
                         "Hi there </s><s>[INST] Who are you [/INST] I am an assistant </s>"
                         "<s>[INST] Another question [/INST]"));
    // No system message: no <<SYS>> block; add_generation_prompt changes nothing.
    const std::vector<ChatMessage> one{{"user", " Hi! "}};
    QCOMPARE(t.render(one, {.add_generation_prompt = false, .date = {}}), std::string("<s>[INST] Hi! [/INST]"));
}

void TestChatTemplate::llama3() {
    const ChatTemplate t(kLlama3, "<|begin_of_text|>", "<|eot_id|>");
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
    QCOMPARE(t.render(one, {.add_generation_prompt = false, .date = {}}),
             std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"));
}

void TestChatTemplate::llama31_dated_system_block() {
    const ChatTemplate t(kLlama31, "<|begin_of_text|>", "<|eot_id|>");
    QCOMPARE(t.family(), ChatFamily::llama3);
    const std::vector<ChatMessage> one{{"user", "Hi"}};
    QCOMPARE(t.render(one),
             std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                         "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                         "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                         "<|start_header_id|>assistant<|end_header_id|>\n\n"));
    const std::vector<ChatMessage> with_system{{"system", " Be brief. "}, {"user", "Hi"}};
    QCOMPARE(t.render(with_system, {.add_generation_prompt = false, .date = "01 Jan 2025"}),
             std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                         "Cutting Knowledge Date: December 2023\nToday Date: 01 Jan 2025\n\n"
                         "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"));
}

void TestChatTemplate::chatml_qwen_default_system() {
    const ChatTemplate t(kQwen25, "", "<|im_end|>");
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

void TestChatTemplate::chatml_plain() {
    const ChatTemplate t(kChatml, "<|im_start|>", "<|im_end|>");
    QCOMPARE(t.family(), ChatFamily::chatml);
    const std::vector<ChatMessage> two{{"user", "Hi"}, {"assistant", "Hello!"}};
    QCOMPARE(t.render(two, {.add_generation_prompt = false, .date = {}}),
             std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"));
}

void TestChatTemplate::mistral_without_system_role() {
    // The original template refuses a system message; the system text goes
    // in front of the first user message with a blank line, as Mistral's
    // later templates do.
    const ChatTemplate t(kMistralOld, "<s>", "</s>");
    QCOMPARE(t.family(), ChatFamily::mistral);
    QCOMPARE(t.render(kConversation),
             std::string("<s>[INST] You are a helpful assistant\n\nHello [/INST]Hi there</s>[INST] Who "
                         "are you [/INST]   I am an assistant   </s>[INST] Another question [/INST]"));
    QCOMPARE(t.render(without_system()),
             std::string("<s>[INST] Hello [/INST]Hi there</s>[INST] Who are you [/INST]   I am an "
                         "assistant   </s>[INST] Another question [/INST]"));
}

void TestChatTemplate::mistral_v1_v3_tekken_v7() {
    QCOMPARE(ChatTemplate(kMistralV1, "<s>", "</s>").render(kConversation),
             std::string("<s> [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] "
                         "Who are you [/INST]    I am an assistant   </s> [INST] Another question "
                         "[/INST]"));
    // v3 and tekken put the system text before the last message when that
    // is a user message.
    QCOMPARE(ChatTemplate(kMistralV3, "<s>", "</s>").render(kConversation),
             std::string("<s>[INST] Hello[/INST] Hi there</s>[INST] Who are you[/INST] I am an "
                         "assistant</s>[INST] You are a helpful assistant\n\nAnother question[/INST]"));
    QCOMPARE(ChatTemplate(kMistralTekken, "<s>", "</s>").render(kConversation),
             std::string("<s>[INST]Hello[/INST]Hi there</s>[INST]Who are you[/INST]   I am an "
                         "assistant   </s>[INST]You are a helpful assistant\n\nAnother "
                         "question[/INST]"));
    QCOMPARE(ChatTemplate(kMistralV7, "<s>", "</s>").render(kConversation),
             std::string("<s>[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] "
                         "Hello[/INST] Hi there</s>[INST] Who are you[/INST]    I am an assistant   "
                         "</s>[INST] Another question[/INST]"));
}

void TestChatTemplate::zephyr_tinyllama() {
    const ChatTemplate t(kZephyr, "<s>", "</s>");
    QCOMPARE(t.family(), ChatFamily::zephyr);
    QCOMPARE(t.render(kConversation),
             std::string("<|system|>\nYou are a helpful assistant</s>\n<|user|>\nHello</s>\n"
                         "<|assistant|>\nHi there</s>\n<|user|>\nWho are you</s>\n<|assistant|>\n"
                         "   I am an assistant   </s>\n<|user|>\nAnother question</s>\n"
                         "<|assistant|>\n"));
}

void TestChatTemplate::gemma() {
    const ChatTemplate t(kGemma, "<bos>", "<eos>");
    QCOMPARE(t.family(), ChatFamily::gemma);
    QCOMPARE(t.render(kConversation),
             std::string("<bos><start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
                         "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are "
                         "you<end_of_turn>\n<start_of_turn>model\nI am an assistant<end_of_turn>\n"
                         "<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"));
}

void TestChatTemplate::unknown_template_is_plain_completion() {
    for (const char* source : {"", "{% for m in messages %}{{ m.content }}{% endfor %}",
                               "<|im_start|>user<|im_sep|>{{ message }}"}) {
        const ChatTemplate t(source, "<s>", "</s>");
        QCOMPARE(t.family(), ChatFamily::none);
        QVERIFY(!t.supported());
        QVERIFY(t.description().starts_with("none"));
        QCOMPARE(t.render(kConversation),
                 std::string("You are a helpful assistant\n\nHelloHi there\nWho are you   I am an "
                             "assistant   \nAnother question"));
    }
}

void TestChatTemplate::refuses_what_the_template_refuses() {
    const std::vector<ChatMessage> two_users{{"user", "a"}, {"user", "b"}};
    for (const char* source : {kLlama2, kMistralOld, kGemma})
        QVERIFY(error_of([&] { ChatTemplate(source, "<s>", "</s>").render(two_users); })
                    .contains("alternate"));
    const std::vector<ChatMessage> odd_role{{"user", "a"}, {"tool", "b"}};
    QVERIFY(error_of([&] { ChatTemplate(kMistralV1, "<s>", "</s>").render(odd_role); })
                .contains("only user and assistant roles"));
    // ChatML and Llama 3 take any roles in any order.
    QVERIFY(error_of([&] { ChatTemplate(kChatml, "", "").render(two_users); }).isEmpty());
    QVERIFY(error_of([&] { ChatTemplate(kLlama3, "", "").render(two_users); }).isEmpty());
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

// Issue 33 item 9's JSON field matrix: every request field the OpenAI
// routes read, given hostile values, each with the answer the server must
// give (400 naming the field, or 200 where the value is legitimately
// accepted). Shared by test_hostile_http (each case's answer) and
// tests/app/test_cli_serve_memory (the cases as a burst whose memory must
// come back).
#pragma once

#include <string>
#include <vector>

namespace kvscope::test {

struct HostileJsonCase {
    std::string name;
    std::string route;  // "/v1/completions" or "/v1/chat/completions"
    std::string body;   // the whole request body (not always valid JSON or UTF-8)
    int status;         // 200 or 400
    std::string param;  // the error's "param"; "" where the error has none (null)
};

namespace hostile_json_detail {

inline std::string nested(int depth, char open, char close, const std::string& inner) {
    return std::string(static_cast<std::size_t>(depth), open) + inner + std::string(static_cast<std::size_t>(depth), close);
}
inline std::string deep_object(int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i)
        s += "{\"a\":";
    return s + "1" + std::string(static_cast<std::size_t>(depth), '}');
}
inline std::string stop_list(int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i)
        s += i ? ",\"a\"" : "\"a\"";
    return s + "]";
}
inline std::string quoted_megabyte() {
    std::string s((1 << 20) + 2, 'a');
    s.front() = s.back() = '"';
    return s;
}

} // namespace hostile_json_detail

// The cases; deep structures are 10,000 levels, lists 100,000 strings,
// long strings 1 MiB (the body limit under test must be 2 MiB or more).
inline std::vector<HostileJsonCase> hostile_json_cases() {
    using namespace hostile_json_detail;
    const std::string completions = "/v1/completions";
    const std::string chat = "/v1/chat/completions";
    const std::string prompt = R"("prompt": "Once", "max_tokens": 1)";
    const std::string messages = R"("messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1)";
    std::vector<HostileJsonCase> cases;
    // `field: value` added to a minimal valid request of each route.
    const auto both = [&](const std::string& field, const std::string& value, int status, const std::string& param) {
        const std::string tail = ", \"" + field + "\": " + value + "}";
        const std::string label = field + "=" + value.substr(0, 24);
        cases.push_back({"completions " + label, completions, "{" + prompt + tail, status, param});
        cases.push_back({"chat " + label, chat, "{" + messages + tail, status, param});
    };
    const auto one = [&](const std::string& route, const std::string& name, const std::string& body, int status,
                         const std::string& param) { cases.push_back({name, route, body, status, param}); };

    // Numbers: wrong types, out of range, huge, NaN-like strings, -0.
    for (const char* f : {"temperature", "top_p", "min_p", "repetition_penalty", "top_k", "seed", "n", "max_tokens"}) {
        for (const char* v : {"\"1\"", "[1]", "{}", "true", "\"NaN\"", "\"Infinity\"", "1e308", "-1e308", "-2"})
            both(f, v, 400, f);
        both(f, "null", 200, ""); // null: the default, as OpenAI's clients send it
    }
    both("top_k", "-1", 200, ""); // -1: no top-k, as vLLM takes it
    both("temperature", "-0", 200, "");
    both("min_p", "-0", 200, "");
    both("top_p", "-0", 400, "top_p"); // (0, 1]
    both("repetition_penalty", "-0", 400, "repetition_penalty");
    both("seed", "-0", 200, "");
    both("top_k", "-0", 200, "");
    both("top_k", "0", 200, "");
    both("n", "0", 400, "n");
    both("max_tokens", "0", 400, "max_tokens");
    both("max_tokens", "4294967296", 400, "max_tokens");
    both("max_tokens", "1.0e0", 200, ""); // a whole float is an integer (Python clients send 16.0)
    both("max_tokens", "1.5", 400, "max_tokens");
    both("seed", "9223372036854775808", 400, "seed");
    both("top_k", "4294967296", 400, "top_k");
    // Booleans.
    for (const char* f : {"stream", "ignore_eos"})
        for (const char* v : {"1", "\"true\"", "[]", "{}"})
            both(f, v, 400, f);
    for (const char* v : {"1", "\"true\"", "[]"}) // echo: completions only (chat ignores it)
        one(completions, "echo=" + std::string(v), "{" + prompt + ", \"echo\": " + v + "}", 400, "echo");
    // logprobs: an integer in completions, a boolean in chat.
    for (const char* v : {"\"1\"", "-1", "21", "1e308", "[]"})
        one(completions, "completions logprobs=" + std::string(v), "{" + prompt + ", \"logprobs\": " + v + "}", 400,
            "logprobs");
    for (const char* v : {"1", "\"true\"", "[]"})
        one(chat, "chat logprobs=" + std::string(v), "{" + messages + ", \"logprobs\": " + v + "}", 400, "logprobs");
    for (const char* v : {"-1", "21", "\"5\""})
        one(chat, "chat top_logprobs=" + std::string(v), "{" + messages + ", \"logprobs\": true, \"top_logprobs\": " + v + "}",
            400, "top_logprobs");
    // stop: wrong types, absurd sizes.
    for (const char* v : {"1", "{}", "[1]", "[null]", "[[\"a\"]]", "true"})
        both("stop", v, 400, "stop");
    both("stop", stop_list(100'000), 400, "stop");
    both("stop", quoted_megabyte(), 400, "stop");
    both("stop", "[" + quoted_megabyte() + "]", 400, "stop");
    both("stop", nested(10'000, '[', ']', "\"a\""), 400, "stop");
    // stream_options: read with "stream": true (refused before the stream
    // starts), ignored without it.
    for (const char* v : {"1", "\"x\"", "[]", "{\"include_usage\": \"yes\"}", "{\"include_usage\": 1}"}) {
        both("stream_options", std::string(v) + ", \"stream\": true", 400,
             v[0] == '{' ? "stream_options.include_usage" : "stream_options");
        both("stream_options", v, 200, "");
    }
    // prompt (completions only).
    for (const char* v : {"1", "true", "{}", "\"\"", "[]", "[-1]", "[1e308]", "[\"a\", 1]", "[[1], [2]]", "[1.5]"})
        one(completions, "prompt=" + std::string(v), "{\"prompt\": " + std::string(v) + "}", 400, "prompt");
    one(completions, "prompt absent", R"({"max_tokens": 1})", 400, "prompt");
    one(completions, "prompt 10,000 arrays deep", "{\"prompt\": " + nested(10'000, '[', ']', "1") + "}", 400, "prompt");
    one(completions, "prompt 10,000 objects deep", "{\"prompt\": " + deep_object(10'000) + "}", 400, "prompt");
    // A prompt far past the context: named by the field that asked for room.
    one(completions, "prompt of 1 MiB", "{\"prompt\": " + quoted_megabyte() + ", \"max_tokens\": 1}", 400, "max_tokens");
    // messages (chat only).
    for (const char* v : {"1", "\"Hi\"", "{}", "[]", "[1]", "[null]", "[{}]", "[{\"role\": 1}]",
                          "[{\"role\": \"tool\", \"content\": \"x\"}]", "[{\"role\": \"user\", \"content\": 1}]",
                          "[{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]",
                          "[{\"role\": \"user\", \"content\": [1]}]"})
        one(chat, "messages=" + std::string(v), "{\"messages\": " + std::string(v) + "}", 400, "messages");
    one(chat, "messages absent", R"({"max_tokens": 1})", 400, "messages");
    one(chat, "messages 10,000 arrays deep", "{\"messages\": " + nested(10'000, '[', ']', "") + "}", 400, "messages");
    one(chat, "content 10,000 objects deep",
        "{\"messages\": [{\"role\": \"user\", \"content\": " + deep_object(10'000) + "}]}", 400, "messages");
    // chat_template_kwargs and reasoning_effort.
    for (const char* v : {"1", "[]", "\"x\"", "{\"x\": 1}", "{\"enable_thinking\": \"yes\"}",
                          "{\"reasoning_effort\": \"max\"}", "{\"date_string\": 5}"})
        one(chat, "chat_template_kwargs=" + std::string(v), "{" + messages + ", \"chat_template_kwargs\": " + v + "}",
            400, "chat_template_kwargs");
    for (const char* v : {"1", "\"max\"", "[]"})
        one(chat, "reasoning_effort=" + std::string(v), "{" + messages + ", \"reasoning_effort\": " + v + "}", 400,
            "reasoning_effort");
    // Strings that are not text: lone surrogates, bytes that are not UTF-8.
    one(completions, "prompt lone surrogate", R"({"prompt": "\ud800"})", 400, "");
    one(completions, "prompt lone low surrogate", R"({"prompt": "a\udc00b"})", 400, "");
    one(chat, "content lone surrogate", R"({"messages": [{"role": "user", "content": "\ud800"}]})", 400, "");
    one(completions, "prompt bytes not UTF-8", "{\"prompt\": \"\xff\xfe\"}", 400, "");
    one(chat, "content bytes not UTF-8", "{\"messages\": [{\"role\": \"user\", \"content\": \"\xc3\"}]}", 400, "");
    one(completions, "overlong UTF-8 in a key", "{\"pr\xc0\xafompt\": \"Once\"}", 400, "");
    one(completions, "stop surrogate pair", R"({"prompt": "Once", "max_tokens": 1, "stop": "\ud83d\ude00"})", 200, "");
    // Duplicate keys: the last one counts (as in Python's json and JavaScript).
    one(completions, "max_tokens twice, bad last", R"({"prompt": "Once", "max_tokens": 1, "max_tokens": -1})", 400,
        "max_tokens");
    one(completions, "max_tokens twice, good last", R"({"prompt": "Once", "max_tokens": -1, "max_tokens": 1})", 200, "");
    // Unknown keys are ignored, however large or deep.
    both("frobnicate", "{\"x\": [1, 2, 3]}", 200, "");
    both("user", quoted_megabyte(), 200, "");
    both("frobnicate", nested(10'000, '[', ']', ""), 200, "");
    both("frobnicate", deep_object(10'000), 200, "");
    // Not an object at all.
    one(completions, "body 10,000 arrays deep", nested(10'000, '[', ']', ""), 400, "");
    one(chat, "body a string", "\"hello\"", 400, "");
    one(completions, "body truncated", R"({"prompt": "Once)", 400, "");
    return cases;
}

} // namespace kvscope::test

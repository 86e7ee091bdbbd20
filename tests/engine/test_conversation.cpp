// engine/chat's Conversation: the oldest exchanges go first when the prompt
// and the reply no longer fit the context; the system message and the
// newest message stay.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/chat/conversation.h"

using namespace kvscope;

namespace {

// One token per character of each message's content, and one per message
// for its role: lengths the test can count.
std::vector<TokenId> count_characters(std::span<const ChatMessage> messages) {
    std::vector<TokenId> ids;
    for (const ChatMessage& m : messages) {
        ids.push_back(0);
        ids.insert(ids.end(), m.content.size(), 1);
    }
    return ids;
}

std::vector<std::string> contents(const Conversation& c) {
    std::vector<std::string> out;
    for (const ChatMessage& m : c.messages())
        out.push_back(m.content);
    return out;
}

} // namespace

class TestConversation : public QObject {
    Q_OBJECT
private slots:
    void fits_without_dropping();
    void drops_oldest_exchanges_first();
    void keeps_the_newest_message_even_when_too_long();
    void reset_keeps_the_system_message();
};

void TestConversation::fits_without_dropping() {
    Conversation c("sys");
    c.add({"user", "hello"});
    const auto prompt = c.prompt_within(100, 10, count_characters);
    QCOMPARE(prompt.size(), std::size_t{4 + 6});
    QCOMPARE(c.messages().size(), std::size_t{2});
    QCOMPARE(c.prompt_within(0, 1000, count_characters).size(), prompt.size()); // 0: no limit
}

void TestConversation::drops_oldest_exchanges_first() {
    Conversation c("sys"); // 4 tokens
    for (const char* text : {"aaaa", "bbbb", "cccc", "dddd"}) // 5 tokens each
        c.add({text[0] == 'a' || text[0] == 'c' ? "user" : "assistant", text});
    c.add({"user", "eeee"});
    // 4 + 5 * 5 = 29 tokens; with 6 for the reply the context of 30 holds
    // 24: one exchange (10 tokens) goes, the system message stays.
    const auto prompt = c.prompt_within(30, 6, count_characters);
    QCOMPARE(prompt.size(), std::size_t{19});
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "cccc", "dddd", "eeee"}));
    // Tighter: the second exchange goes too.
    QCOMPARE(c.prompt_within(15, 6, count_characters).size(), std::size_t{9});
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "eeee"}));
}

void TestConversation::keeps_the_newest_message_even_when_too_long() {
    Conversation c;
    c.add({"user", "first"});
    c.add({"assistant", "reply"});
    c.add({"user", std::string(50, 'x')});
    const auto prompt = c.prompt_within(20, 5, count_characters);
    QCOMPARE(prompt.size(), std::size_t{51}); // still too long: the caller says so
    QCOMPARE(c.messages().size(), std::size_t{1});
    c.drop_last();
    QVERIFY(c.messages().empty());
}

void TestConversation::reset_keeps_the_system_message() {
    Conversation c("be brief");
    c.add({"user", "hi"});
    c.add({"assistant", "hello"});
    c.reset();
    QCOMPARE(contents(c), std::vector<std::string>{"be brief"});
    c.drop_last(); // the system message is never dropped
    QCOMPARE(c.messages().size(), std::size_t{1});
}

QTEST_APPLESS_MAIN(TestConversation)
#include "test_conversation.moc"

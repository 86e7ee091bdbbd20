// engine/chat's Conversation: each turn's prompt is the previous prompt, the
// reply's ids as sampled and the new turn's ids; the oldest exchanges go
// first when the prompt and the reply no longer fit the context; the system
// message and the newest message stay.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/chat/conversation.h"
#include "engine/core/error.h"

using namespace kvscope;

namespace {

constexpr TokenId kRole = 0;    // one per message, for its role
constexpr TokenId kTurnEnd = 9; // what ends a reply the model did not end

// One token per character of each message's content and one per role:
// lengths the test can count. After a reply: its end (unless the reply's
// last id was kTurnEnd), then the user's role and text.
TurnEncoder counting() {
    TurnEncoder e;
    e.opening = [](const std::optional<std::string>& system, const std::string& user) {
        std::vector<TokenId> ids;
        if (system) {
            ids.push_back(kRole);
            ids.insert(ids.end(), system->size(), 1);
        }
        ids.push_back(kRole);
        ids.insert(ids.end(), user.size(), 2);
        return ids;
    };
    e.after_reply = [](std::span<const TokenId> reply, const std::string& user) {
        std::vector<TokenId> ids;
        if (reply.empty() || reply.back() != kTurnEnd)
            ids.push_back(kTurnEnd);
        ids.push_back(kRole);
        ids.insert(ids.end(), user.size(), 2);
        return ids;
    };
    e.reply = [](const std::string& text) { return std::vector<TokenId>(text.size(), 3); };
    return e;
}

std::vector<std::string> contents(const Conversation& c) {
    std::vector<std::string> out;
    for (const ChatMessage& m : c.messages())
        out.push_back(m.content);
    return out;
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

void exchange(Conversation& c, const TurnEncoder& e, const std::string& user, std::vector<TokenId> reply) {
    c.add_user(user, e);
    c.add_reply(std::move(reply), "r");
}

} // namespace

class TestConversation : public QObject {
    Q_OBJECT
private slots:
    void each_prompt_extends_the_last_with_the_reply_as_sampled();
    void fits_without_dropping();
    void drops_oldest_exchanges_first();
    void keeps_the_newest_message_even_when_too_long();
    void reset_keeps_the_system_message();
    void a_new_system_message_changes_only_the_opening();
    void from_messages_encodes_replies_from_their_text();
    void a_user_message_waits_for_the_reply();
};

void TestConversation::each_prompt_extends_the_last_with_the_reply_as_sampled() {
    const TurnEncoder e = counting();
    Conversation c("sys");
    c.add_user("hello", e);
    const std::vector<TokenId> first = c.prompt_within(0, 10, e);
    QCOMPARE(first, e.opening("sys", "hello"));
    const std::vector<TokenId> reply{5, 6, 7, kTurnEnd}; // ended by the model
    c.add_reply(reply, "five six seven");
    c.add_user("again", e);
    const std::vector<TokenId> second = c.prompt_within(0, 10, e);
    QCOMPARE(second, concat(concat(first, reply), e.after_reply(reply, "again")));
    QCOMPARE(second.size(), first.size() + reply.size() + 6); // no second turn end
    const std::vector<TokenId> cut{8, 8}; // a reply that hit its token limit
    c.add_reply(cut, "eight eight");
    c.add_user("third", e);
    QCOMPARE(c.prompt_within(0, 10, e), concat(concat(second, cut), e.after_reply(cut, "third")));
}

void TestConversation::fits_without_dropping() {
    const TurnEncoder e = counting();
    Conversation c("sys");
    c.add_user("hello", e);
    const auto prompt = c.prompt_within(100, 10, e);
    QCOMPARE(prompt.size(), std::size_t{4 + 6});
    QCOMPARE(c.messages().size(), std::size_t{2});
    QCOMPARE(c.prompt_within(0, 1000, e).size(), prompt.size()); // 0: no limit
}

void TestConversation::drops_oldest_exchanges_first() {
    const TurnEncoder e = counting();
    Conversation c("sys");                // 4 tokens
    exchange(c, e, "aaaa", {3, 3, 3, 3}); // 5 + 4
    exchange(c, e, "cccc", {3, 3, 3, 3}); // 1 (turn end) + 5 + 4
    c.add_user("eeee", e);                // 1 + 5
    QCOMPARE(c.prompt_within(0, 0, e).size(), std::size_t{4 + 9 + 10 + 6});
    // With 6 for the reply a context of 30 holds 24: the first exchange
    // goes and "cccc" opens the conversation after the system message (its
    // turn end went with the reply before it).
    const auto prompt = c.prompt_within(30, 6, e);
    QCOMPARE(prompt.size(), std::size_t{4 + 5 + 4 + 6});
    QCOMPARE(std::vector<TokenId>(prompt.begin(), prompt.begin() + 9), e.opening("sys", "cccc"));
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "cccc", "r", "eeee"}));
    // Tighter: the second exchange goes too.
    QCOMPARE(c.prompt_within(15, 6, e), e.opening("sys", "eeee"));
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "eeee"}));
}

void TestConversation::keeps_the_newest_message_even_when_too_long() {
    const TurnEncoder e = counting();
    Conversation c;
    exchange(c, e, "first", {3});
    c.add_user(std::string(50, 'x'), e);
    const auto prompt = c.prompt_within(20, 5, e);
    QCOMPARE(prompt.size(), std::size_t{51}); // still too long: the caller says so
    QCOMPARE(c.messages().size(), std::size_t{1});
    c.drop_last();
    QVERIFY(c.messages().empty());
}

void TestConversation::reset_keeps_the_system_message() {
    const TurnEncoder e = counting();
    Conversation c("be brief");
    exchange(c, e, "hi", {3});
    c.reset();
    QCOMPARE(contents(c), std::vector<std::string>{"be brief"});
    c.drop_last(); // the system message is never dropped
    QCOMPARE(c.messages().size(), std::size_t{1});
}

void TestConversation::a_new_system_message_changes_only_the_opening() {
    const TurnEncoder e = counting();
    Conversation c("short");
    exchange(c, e, "hello", {4, 4});
    c.add_user("again", e);
    const auto before = c.prompt_within(0, 0, e);
    c.set_system("much longer", e);
    const auto after = c.prompt_within(0, 0, e);
    QCOMPARE(after.size(), before.size() + 6);
    QCOMPARE(std::vector<TokenId>(after.begin(), after.begin() + 18), e.opening("much longer", "hello"));
    QCOMPARE(std::vector<TokenId>(after.begin() + 18, after.end()),
             std::vector<TokenId>(before.begin() + 12, before.end()));
}

void TestConversation::from_messages_encodes_replies_from_their_text() {
    const TurnEncoder e = counting();
    const std::vector<ChatMessage> messages{{"system", "sys"}, {"user", "hello"}, {"assistant", "hi there"}};
    Conversation c = Conversation::from_messages(messages, e);
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "hello", "hi there"}));
    c.add_user("more", e);
    const std::vector<TokenId> reply(8, 3);
    QCOMPARE(c.prompt_within(0, 0, e), concat(concat(e.opening("sys", "hello"), reply), e.after_reply(reply, "more")));
}

void TestConversation::a_user_message_waits_for_the_reply() {
    const TurnEncoder e = counting();
    Conversation c;
    c.add_user("one", e);
    QVERIFY_THROWS_EXCEPTION(Error, c.add_user("two", e));
    QVERIFY_THROWS_EXCEPTION(Error, Conversation().add_reply({1}, "x"));
}

QTEST_APPLESS_MAIN(TestConversation)
#include "test_conversation.moc"

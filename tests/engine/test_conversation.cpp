// engine/chat's Conversation: each turn's prompt is the previous prompt, the
// reply's ids as sampled and the new turn's ids; the oldest exchanges go
// first when the prompt and the reply no longer fit the context; the system
// message and the newest message stay. ChatSession's context policy on top:
// dropping, then limiting the reply, the refusal when the newest message
// alone fills the context, drop_last, histories kept as text, and the notes'
// words.
#include <QtTest>

#include <string>
#include <vector>

#include "engine/chat/chat_session.h"
#include "engine/chat/conversation.h"
#include "engine/core/error.h"

using namespace kvscope;

namespace {

constexpr TokenId kRole = 0;    // one per message, for its role
constexpr TokenId kTurnEnd = 9; // what ends a reply the model did not end
constexpr TokenId kWhole = 8;   // a message's role in a conversation rendered whole

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
    // Rendered whole: one id per message for its role (kWhole, so a test can
    // tell it from the pieces), one per character, and one for the header.
    e.whole = [](std::span<const ChatMessage> messages) {
        std::vector<TokenId> ids;
        for (const ChatMessage& m : messages) {
            ids.push_back(kWhole);
            ids.insert(ids.end(), m.content.size(), m.role == "system" ? 1 : m.role == "user" ? 2 : 3);
        }
        ids.push_back(kWhole);
        return ids;
    };
    return e;
}

std::vector<std::string> contents(const ChatSession& s) {
    std::vector<std::string> out;
    for (const ChatMessage& m : s.messages())
        out.push_back(m.content);
    return out;
}

// A planned turn answered with `reply`.
void exchange(ChatSession& s, const std::string& user, std::vector<TokenId> reply) {
    s.plan_turn(user, 1);
    s.add_reply(std::move(reply), "r");
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

    void session_fits_without_dropping();
    void session_drops_oldest_exchanges_first();
    void session_limits_the_reply_to_the_room_left();
    void session_refuses_a_message_that_fills_the_context();
    void session_room_left_when_no_limit_is_asked();
    void session_drop_last_forgets_a_failed_turn();
    void session_drops_what_dropping_one_by_one_would();
    void session_of_history_renders_whole();
    void session_histories_and_misuse();
    void the_notes_words();
};

void TestConversation::each_prompt_extends_the_last_with_the_reply_as_sampled() {
    const TurnEncoder e = counting();
    Conversation c("sys");
    c.add_user("hello", e);
    const std::vector<TokenId> first = c.tokens();
    QCOMPARE(first, e.opening("sys", "hello"));
    const std::vector<TokenId> reply{5, 6, 7, kTurnEnd}; // ended by the model
    c.add_reply(reply, "five six seven");
    c.add_user("again", e);
    const std::vector<TokenId> second = c.tokens();
    QCOMPARE(second, concat(concat(first, reply), e.after_reply(reply, "again")));
    QCOMPARE(second.size(), first.size() + reply.size() + 6); // no second turn end
    const std::vector<TokenId> cut{8, 8}; // a reply that hit its token limit
    c.add_reply(cut, "eight eight");
    c.add_user("third", e);
    QCOMPARE(c.tokens(), concat(concat(second, cut), e.after_reply(cut, "third")));
}

void TestConversation::fits_without_dropping() {
    const TurnEncoder e = counting();
    Conversation c("sys");
    c.add_user("hello", e);
    QCOMPARE(c.tokens().size(), std::size_t{4 + 6});
    QCOMPARE(c.messages().size(), std::size_t{2});
}

void TestConversation::drops_oldest_exchanges_first() {
    const TurnEncoder e = counting();
    Conversation c("sys");                // 4 tokens
    exchange(c, e, "aaaa", {3, 3, 3, 3}); // 5 + 4
    exchange(c, e, "cccc", {3, 3, 3, 3}); // 1 (turn end) + 5 + 4
    c.add_user("eeee", e);                // 1 + 5
    QCOMPARE(c.tokens().size(), std::size_t{4 + 9 + 10 + 6});
    // The first exchange goes and "cccc" opens the conversation after the
    // system message (its turn end went with the reply before it).
    c.drop_oldest(1, e);
    const auto prompt = c.tokens();
    QCOMPARE(prompt.size(), std::size_t{4 + 5 + 4 + 6});
    QCOMPARE(std::vector<TokenId>(prompt.begin(), prompt.begin() + 9), e.opening("sys", "cccc"));
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "cccc", "r", "eeee"}));
    // The second exchange goes too.
    c.drop_oldest(1, e);
    QCOMPARE(c.tokens(), e.opening("sys", "eeee"));
    QCOMPARE(contents(c), (std::vector<std::string>{"sys", "eeee"}));
}

void TestConversation::keeps_the_newest_message_even_when_too_long() {
    const TurnEncoder e = counting();
    Conversation c;
    exchange(c, e, "first", {3});
    c.add_user(std::string(50, 'x'), e);
    c.drop_oldest(5, e); // as many as there are: the newest stays
    QCOMPARE(c.tokens().size(), std::size_t{51});
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
    const auto before = c.tokens();
    c.set_system("much longer", e);
    const auto after = c.tokens();
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
    QCOMPARE(c.tokens(), concat(concat(e.opening("sys", "hello"), reply), e.after_reply(reply, "more")));
}

void TestConversation::a_user_message_waits_for_the_reply() {
    const TurnEncoder e = counting();
    Conversation c;
    c.add_user("one", e);
    QVERIFY_THROWS_EXCEPTION(Error, c.add_user("two", e));
    QVERIFY_THROWS_EXCEPTION(Error, Conversation().add_reply({1}, "x"));
}

void TestConversation::session_fits_without_dropping() {
    const TurnEncoder e = counting();
    ChatSession s(e, 100, "sys");
    const TurnPlan plan = s.plan_turn("hello", 10);
    QCOMPARE(plan.prompt, e.opening("sys", "hello"));
    QCOMPARE(plan.max_new_tokens, 10u);
    QCOMPARE(plan.dropped_messages, 0u);
    QCOMPARE(plan.reply_limit, 0u);
    QVERIFY(context_note(plan).empty());
    // The next turn extends this one with the reply as sampled.
    const std::vector<TokenId> reply{5, 6, kTurnEnd};
    s.add_reply(reply, "five six");
    QCOMPARE(s.plan_turn("again", 10).prompt, concat(concat(plan.prompt, reply), e.after_reply(reply, "again")));
    QCOMPARE(contents(s), (std::vector<std::string>{"sys", "hello", "five six", "again"}));
    // 0: no limit.
    ChatSession unlimited(e, 0);
    QCOMPARE(unlimited.plan_turn(std::string(500, 'x'), 1000).max_new_tokens, 1000u);
}

void TestConversation::session_drops_oldest_exchanges_first() {
    const TurnEncoder e = counting();
    ChatSession s(e, 30, "sys");      // 4 tokens
    exchange(s, "aaaa", {3, 3, 3, 3}); // 5 + 4
    exchange(s, "cccc", {3, 3, 3, 3}); // 1 (turn end) + 5 + 4
    // 4 + 9 + 10 + 6 = 29 tokens, and 6 for the reply: past 30. The first
    // exchange goes and "cccc" opens the conversation after the system
    // message; 19 + 6 fit.
    const TurnPlan plan = s.plan_turn("eeee", 6);
    QCOMPARE(plan.prompt.size(), std::size_t{4 + 5 + 4 + 6});
    QCOMPARE(std::vector<TokenId>(plan.prompt.begin(), plan.prompt.begin() + 9), e.opening("sys", "cccc"));
    QCOMPARE(plan.dropped_messages, 2u);
    QCOMPARE(plan.reply_limit, 0u);
    QCOMPARE(plan.max_new_tokens, 6u);
    QCOMPARE(context_note(plan), std::string("The conversation outgrew the model's context: its oldest 2 messages "
                                             "were left out (the system prompt stays)."));
    QCOMPARE(contents(s), (std::vector<std::string>{"sys", "cccc", "r", "eeee"})); // for good
    s.add_reply({3}, "r");
    // Tighter: all but the newest go.
    const TurnPlan tight = s.plan_turn("gggg", 20);
    QCOMPARE(tight.prompt, e.opening("sys", "gggg"));
    QCOMPARE(tight.dropped_messages, 4u);
    QCOMPARE(tight.reply_limit, 0u);
}

void TestConversation::session_limits_the_reply_to_the_room_left() {
    const TurnEncoder e = counting();
    ChatSession s(e, 60, "sys");
    exchange(s, "hi", {3, 3});
    // The newest message alone (with the system prompt) takes 4 + 41 = 45:
    // the exchange before it goes and the reply gets the 15 left.
    const TurnPlan plan = s.plan_turn(std::string(40, 'x'), 20);
    QCOMPARE(plan.prompt.size(), std::size_t{45});
    QCOMPARE(plan.dropped_messages, 2u);
    QCOMPARE(plan.max_new_tokens, 15u);
    QCOMPARE(plan.reply_limit, 15u);
    QCOMPARE(context_note(plan),
             std::string("The conversation outgrew the model's context: its oldest 2 messages were left out (the "
                         "system prompt stays). The reply was limited to 15 tokens: all the room the context had "
                         "left."));
    // Limited without dropping: nothing older to drop.
    ChatSession fresh(e, 60, "sys");
    const TurnPlan only = fresh.plan_turn(std::string(54, 'x'), 20);
    QCOMPARE(only.dropped_messages, 0u);
    QCOMPARE(only.reply_limit, 1u); // 4 + 55 = 59: one token of room
    QCOMPARE(only.max_new_tokens, 1u);
    QCOMPARE(context_note(only), std::string("The reply was limited to 1 tokens: all the room the context had left."));
}

void TestConversation::session_refuses_a_message_that_fills_the_context() {
    const TurnEncoder e = counting();
    ChatSession s(e, 30, "sys");
    exchange(s, "aaaa", {3, 3});
    const auto before = s.messages();
    // 4 + 26 = 30: the whole context, no room for one reply token.
    try {
        s.plan_turn(std::string(25, 'x'), 5);
        QFAIL("no NoRoomForReply");
    } catch (const NoRoomForReply& refused) {
        QCOMPARE(refused.prompt_tokens(), std::size_t{30});
        QCOMPARE(refused.context(), std::size_t{30});
        const std::string why = refused.what();
        QVERIFY2(why.find("30 tokens") != std::string::npos && why.find("no room for a reply") != std::string::npos,
                 refused.what());
    }
    QVERIFY_THROWS_EXCEPTION(Error, s.plan_turn(std::string(40, 'x'), 0)); // a kvscope::Error, with any max
    // The session is as it was: nothing dropped, no message added.
    QCOMPARE(s.messages().size(), before.size());
    QCOMPARE(contents(s), (std::vector<std::string>{"sys", "aaaa", "r"}));
    // One token less leaves room for one.
    const TurnPlan plan = s.plan_turn(std::string(24, 'x'), 5);
    QCOMPARE(plan.prompt.size(), std::size_t{29});
    QCOMPARE(plan.reply_limit, 1u);
    QCOMPARE(plan.dropped_messages, 2u);
}

void TestConversation::session_room_left_when_no_limit_is_asked() {
    const TurnEncoder e = counting();
    ChatSession s(e, 50, "sys");
    exchange(s, "aaaa", {3, 3, 3, 3});
    // 0: all the room left, never "limited"; nothing drops while one token fits.
    const TurnPlan plan = s.plan_turn("bbbb", 0);
    QCOMPARE(plan.prompt.size(), std::size_t{4 + 9 + 6});
    QCOMPARE(plan.max_new_tokens, 50u - 19u);
    QCOMPARE(plan.reply_limit, 0u);
    QCOMPARE(plan.dropped_messages, 0u);
    ChatSession none(e, 0);
    QVERIFY_THROWS_EXCEPTION(Error, none.plan_turn("x", 0)); // no context, no limit
    QVERIFY(none.messages().empty());
}

void TestConversation::session_drop_last_forgets_a_failed_turn() {
    const TurnEncoder e = counting();
    ChatSession s(e, 0, "sys");
    exchange(s, "one", {3});
    const TurnPlan failed = s.plan_turn("two", 5);
    s.drop_last(); // the engine refused it: it never happened
    QCOMPARE(contents(s), (std::vector<std::string>{"sys", "one", "r"}));
    QCOMPARE(s.plan_turn("two", 5).prompt, failed.prompt);
    s.drop_last();
    s.drop_last(); // nothing planned: nothing to forget
    QCOMPARE(s.messages().size(), std::size_t{3});
    s.reset();
    QCOMPARE(contents(s), std::vector<std::string>{"sys"});
    s.set_system(std::nullopt);
    QVERIFY(!s.system());
    QCOMPARE(s.plan_turn("hi", 1).prompt, e.opening(std::nullopt, "hi"));
}

void TestConversation::session_drops_what_dropping_one_by_one_would() {
    // The session searches for the number of exchanges to drop; this drops
    // them one at a time: the same policy gives the same prompts.
    const TurnEncoder e = counting();
    const auto one_by_one = [&e](Conversation& c, std::size_t context, std::uint32_t reply_tokens) {
        while (c.tokens().size() + reply_tokens > context && c.exchanges() > 1)
            c.drop_oldest(1, e);
        return c.tokens();
    };
    std::uint32_t dropped = 0;
    for (std::size_t context = 20; context <= 140; context += 7) {
        ChatSession s(e, context, "sys");
        Conversation c("sys");
        for (int turn = 0; turn < 12; ++turn) {
            const std::string user(static_cast<std::size_t>(1 + (turn * 5) % 9), 'u');
            const std::vector<TokenId> reply(static_cast<std::size_t>(1 + (turn * 3) % 7), 3);
            const std::uint32_t max_new = 4;
            c.add_user(user, e);
            const std::vector<TokenId> expected = one_by_one(c, context, max_new);
            QVERIFY(expected.size() < context); // the newest message always fits here
            const TurnPlan plan = s.plan_turn(user, max_new);
            QCOMPARE(plan.prompt, expected);
            QCOMPARE(plan.max_new_tokens, std::min<std::size_t>(max_new, context - expected.size()));
            dropped += plan.dropped_messages;
            QCOMPARE(s.messages().size(), c.messages().size());
            s.add_reply(reply, "r");
            c.add_reply(reply, "r");
        }
    }
    QVERIFY(dropped > 100);
}

void TestConversation::session_of_history_renders_whole() {
    const TurnEncoder e = counting();
    const std::vector<ChatMessage> history{
        {"system", "sys"}, {"user", "aaaa"}, {"assistant", "rrrr"}, {"user", "cccc"}, {"assistant", "rr"}};
    std::vector<ChatMessage> all = history;
    all.push_back({"user", "eeee"});
    // Everything fits: the ids of the whole conversation rendered at once.
    ChatSession roomy = ChatSession::of_history(history, e, 100);
    const TurnPlan plan = roomy.plan_turn("eeee", 10);
    QCOMPARE(plan.prompt, e.whole(all));
    QCOMPARE(plan.dropped_messages, 0u);
    // 4 + 5 + 5 + 5 + 3 + 5 + 1 = 28: with 10 for the reply a context of 30
    // keeps the last exchange (19), 25 only the system prompt and the newest (9).
    ChatSession s = ChatSession::of_history(history, e, 30);
    const TurnPlan dropped = s.plan_turn("eeee", 10);
    QCOMPARE(dropped.dropped_messages, 2u);
    QCOMPARE(dropped.prompt, e.whole(std::vector<ChatMessage>{all[0], all[3], all[4], all[5]}));
    ChatSession t = ChatSession::of_history(history, e, 25);
    const TurnPlan both = t.plan_turn("eeee", 20);
    QCOMPARE(both.dropped_messages, 4u);
    QCOMPARE(both.prompt, e.whole(std::vector<ChatMessage>{all[0], all[5]}));
    QCOMPARE(both.reply_limit, 25u - 10u);
    QCOMPARE(contents(t), (std::vector<std::string>{"sys", "eeee"}));
    // The pieces, from text: the app's rebuild of a chat for another model.
    ChatSession rebuilt = ChatSession::from_messages(history, e, 0);
    QCOMPARE(rebuilt.plan_turn("eeee", 1).prompt.size(), std::size_t{4 + 5 + 4 + 6 + 2 + 6});
    TurnEncoder pieces_only = e;
    pieces_only.whole = {};
    QVERIFY_THROWS_EXCEPTION(Error, ChatSession::of_history(history, pieces_only, 100));
}

void TestConversation::session_histories_and_misuse() {
    using M = std::vector<ChatMessage>;
    QVERIFY(ChatSession::is_history(M{}));
    QVERIFY(ChatSession::is_history(M{{"system", "s"}}));
    QVERIFY(ChatSession::is_history(M{{"user", "a"}, {"assistant", "b"}}));
    QVERIFY(ChatSession::is_history(M{{"system", "s"}, {"user", "a"}, {"assistant", "b"}}));
    QVERIFY(!ChatSession::is_history(M{{"user", "a"}}));                                    // unanswered
    QVERIFY(!ChatSession::is_history(M{{"assistant", "b"}}));                               // no user first
    QVERIFY(!ChatSession::is_history(M{{"user", "a"}, {"user", "b"}}));                     // two in a row
    QVERIFY(!ChatSession::is_history(M{{"user", "a"}, {"system", "s"}}));                   // system later
    QVERIFY(!ChatSession::is_history(M{{"system", "s"}, {"system", "t"}, {"user", "a"}, {"assistant", "b"}}));
    const TurnEncoder e = counting();
    QVERIFY_THROWS_EXCEPTION(Error, ChatSession::from_messages(M{{"user", "a"}, {"user", "b"}}, e, 0));
    // A turn waits for the reply to the last one, and the session stays as it was.
    ChatSession s(e, 0);
    s.plan_turn("one", 1);
    QVERIFY_THROWS_EXCEPTION(Error, s.plan_turn("two", 1));
    QCOMPARE(contents(s), std::vector<std::string>{"one"});
    s.add_reply({3}, "r");
    QVERIFY_THROWS_EXCEPTION(Error, s.add_reply({3}, "r"));
}

void TestConversation::the_notes_words() {
    QCOMPARE(dropped_messages_note(4), std::string("The conversation outgrew the model's context: its oldest 4 "
                                                   "messages were left out (the system prompt stays)."));
    QCOMPARE(reply_limit_note(37),
             std::string("The reply was limited to 37 tokens: all the room the context had left."));
    QVERIFY(dropped_messages_note(0).empty());
    QVERIFY(reply_limit_note(0).empty());
    QVERIFY(context_note(0, 0).empty());
    QCOMPARE(context_note(2, 0), dropped_messages_note(2));
    QCOMPARE(context_note(0, 9), reply_limit_note(9));
    QCOMPARE(context_note(TurnPlan{{}, 9, 2, 9}), dropped_messages_note(2) + " " + reply_limit_note(9));
}

QTEST_APPLESS_MAIN(TestConversation)
#include "test_conversation.moc"

#include "engine/tokenizer/encode_benchmark.h"

#include <array>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

namespace kvscope {

double bench_encode_mb_per_s(const Tokenizer& tokenizer, std::string_view text) {
    using Clock = std::chrono::steady_clock;
    constexpr std::chrono::milliseconds kMinDuration{250};
    const Clock::time_point start = Clock::now();
    double bytes = 0;
    std::chrono::duration<double> elapsed{};
    do {
        tokenizer.encode(text);
        bytes += static_cast<double>(text.size());
        elapsed = Clock::now() - start;
    } while (elapsed < kMinDuration);
    return bytes / 1e6 / elapsed.count();
}

namespace {

// The most frequent English words, roughly in frequency order.
constexpr std::array<std::string_view, 183> kWords = {
    "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on",
    "are", "with", "as", "I", "his", "they", "be", "at", "one", "have", "this", "from", "or",
    "had", "by", "not", "word", "but", "what", "some", "we", "can", "out", "other", "were",
    "all", "there", "when", "up", "use", "your", "how", "said", "an", "each", "she", "which",
    "do", "their", "time", "if", "will", "way", "about", "many", "then", "them", "write",
    "would", "like", "so", "these", "her", "long", "make", "thing", "see", "him", "two", "has",
    "look", "more", "day", "could", "go", "come", "did", "number", "sound", "no", "most",
    "people", "my", "over", "know", "water", "than", "call", "first", "who", "may", "down",
    "side", "been", "now", "find", "any", "new", "work", "part", "take", "get", "place",
    "made", "live", "where", "after", "back", "little", "only", "round", "man", "year", "came",
    "show", "every", "good", "me", "give", "our", "under", "name", "very", "through", "just",
    "form", "sentence", "great", "think", "say", "help", "low", "line", "differ", "turn",
    "cause", "much", "mean", "before", "move", "right", "boy", "old", "too", "same", "tell",
    "does", "set", "three", "want", "air", "well", "also", "play", "small", "end", "put",
    "home", "read", "hand", "port", "large", "spell", "add", "even", "land", "here", "must",
    "big", "high", "such", "follow", "act", "why", "ask", "men", "change", "went", "light"};

constexpr std::array<std::string_view, 24> kSyllables = {
    "ka", "lo", "ren", "ti", "mar", "vel", "son", "dra", "qui", "pen", "tor", "al",
    "is", "ber", "ny", "cho", "sta", "ing", "ment", "er", "ous", "ly", "tion", "gra"};

} // namespace

std::string english_like_text(std::size_t bytes, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    // Zipf-like: word k with weight 1 / (k + 2).
    std::vector<double> weights(kWords.size());
    for (std::size_t k = 0; k < weights.size(); ++k) weights[k] = 1.0 / static_cast<double>(k + 2);
    std::discrete_distribution<std::size_t> pick_word(weights.begin(), weights.end());
    auto chance = [&rng](unsigned one_in) { return rng() % one_in == 0; };

    std::string text;
    text.reserve(bytes + 256);
    while (text.size() < bytes) {
        const std::size_t sentences = 3 + rng() % 5;
        for (std::size_t s = 0; s < sentences; ++s) {
            const std::size_t n_words = 5 + rng() % 18;
            for (std::size_t w = 0; w < n_words; ++w) {
                std::string word;
                if (chance(8)) {
                    for (std::size_t i = 0, n = 2 + rng() % 3; i < n; ++i)
                        word += kSyllables[rng() % kSyllables.size()];
                } else if (chance(60)) {
                    word = std::to_string(rng() % (chance(2) ? 100 : 100000));
                } else {
                    word = kWords[pick_word(rng)];
                }
                if (w == 0 && word[0] >= 'a' && word[0] <= 'z') word[0] = static_cast<char>(word[0] - 'a' + 'A');
                if (w > 0) text += ' ';
                if (chance(40)) word = "\"" + word + "\"";
                text += word;
                if (w + 1 < n_words && chance(9)) text += ',';
            }
            text += chance(12) ? "?" : chance(15) ? "!" : ".";
            text += s + 1 < sentences ? " " : "";
        }
        text += "\n\n";
    }
    return text;
}

} // namespace kvscope

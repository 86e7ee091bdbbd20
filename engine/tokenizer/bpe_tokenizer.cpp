#include "engine/tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/core/log.h"
#include "engine/tokenizer/spm_tokenizer.h"
#include "engine/tokenizer/unicode_class.h"

namespace kvscope {
namespace {

// The last code point the byte-to-unicode map uses: U+0100 + 67.
constexpr char32_t kMaxMapped = 0x143;

struct ByteMap {
    std::array<char32_t, 256> to_code_point{};
    std::array<std::int16_t, kMaxMapped + 1> to_byte{};

    ByteMap() {
        to_byte.fill(-1);
        char32_t next = 0x100;
        for (unsigned b = 0; b < 256; ++b) {
            const bool itself = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            to_code_point[b] = itself ? b : next++;
            to_byte[to_code_point[b]] = static_cast<std::int16_t>(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap map;
    return map;
}

std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
    return std::uint64_t{static_cast<std::uint32_t>(left)} << 32 | static_cast<std::uint32_t>(right);
}

struct WordIds {
    std::size_t offset;
    std::size_t count;
};

} // namespace

char32_t gpt2_byte_to_code_point(std::uint8_t byte) { return byte_map().to_code_point[byte]; }

std::optional<std::string> gpt2_string_to_bytes(std::string_view text) {
    const ByteMap& map = byte_map();
    std::string bytes;
    bytes.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const unicode::Char c = unicode::decode(text, pos);
        if (!c.valid || c.cp > kMaxMapped || map.to_byte[c.cp] < 0) return std::nullopt;
        bytes.push_back(static_cast<char>(map.to_byte[c.cp]));
        pos += c.length;
    }
    return bytes;
}

std::string gpt2_token_bytes(const Vocabulary& vocab, std::int32_t id) {
    const std::string& text = vocab.tokens[static_cast<std::size_t>(id)];
    switch (static_cast<TokenType>(vocab.types[static_cast<std::size_t>(id)])) {
    case TokenType::normal: return gpt2_string_to_bytes(text).value_or(text);
    case TokenType::user_defined: return text;
    case TokenType::byte: {
        const auto byte = parse_byte_piece(text);
        return byte ? std::string(1, static_cast<char>(*byte)) : std::string();
    }
    default: return {};
    }
}

// (left symbol, right symbol) -> (rank, merged symbol), open addressing.
// The first merge of a pair wins, as in llama.cpp's bpe_ranks.
class BpeTokenizer::PairTable {
public:
    struct Entry {
        std::uint64_t key = 0;
        std::int32_t rank = -1; // -1: empty
        std::int32_t result = -1;
    };

    explicit PairTable(std::size_t capacity)
        : slots_(std::bit_ceil(capacity + capacity / 2 + 2)),
          shift_(64 - std::countr_zero(slots_.size())) {}

    void insert(std::uint64_t key, std::int32_t rank, std::int32_t result) {
        Entry& e = slots_[slot_of(key)];
        if (e.rank >= 0) return;
        e = {key, rank, result};
    }

    const Entry* find(std::uint64_t key) const {
        const Entry& e = slots_[slot_of(key)];
        return e.rank >= 0 ? &e : nullptr;
    }

private:
    std::size_t slot_of(std::uint64_t key) const {
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = (key * 0x9E3779B97F4A7C15ull) >> shift_;; i = (i + 1) & mask) {
            const Entry& e = slots_[i];
            if (e.rank < 0 || e.key == key) return i;
        }
    }

    std::vector<Entry> slots_;
    int shift_;
};

// Scratch memory of one encode() call.
struct BpeTokenizer::Workspace {
    struct Symbol {
        std::int32_t id; // -1: merged into its left neighbour
        std::int32_t prev;
        std::int32_t next;
    };
    struct Candidate {
        std::int32_t rank;
        std::int32_t left;
        std::int32_t right;
        std::int32_t left_id;
        std::int32_t right_id;
        std::int32_t result;
    };
    // Heap order: lowest rank first, then leftmost.
    struct Later {
        bool operator()(const Candidate& a, const Candidate& b) const {
            return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
        }
    };

    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
    std::unordered_map<std::string_view, WordIds> seen;
};

BpeTokenizer::BpeTokenizer(const Vocabulary& vocab)
    : pre_(choose_pre_tokenizer(vocab.pre)),
      n_tokens_(static_cast<std::int32_t>(vocab.tokens.size())),
      tokens_(static_cast<std::size_t>(std::count(
          vocab.types.begin(), vocab.types.end(), static_cast<std::int32_t>(TokenType::normal)))),
      unk_(vocab.unk) {
    const auto log = logger("tokenizer");
    if (vocab.merges.empty())
        throw Error("the gpt2 (byte-level BPE) vocabulary has no merges (tokenizer.ggml.merges)");
    if (!pre_.known)
        log->warn("unknown pre-tokenizer '{}' (tokenizer.ggml.pre): using GPT-2's; token ids may "
                  "differ from the model's own tokenizer",
                  vocab.pre);
    else if (vocab.pre.empty())
        log->warn("no pre-tokenizer given (tokenizer.ggml.pre is missing): using llama.cpp's "
                  "'default'; token ids may differ from the model's own tokenizer");

    std::size_t unmapped = 0;
    for (std::int32_t id = 0; id < n_tokens_; ++id) {
        const auto i = static_cast<std::size_t>(id);
        if (static_cast<TokenType>(vocab.types[i]) != TokenType::normal) continue;
        const auto bytes = gpt2_string_to_bytes(vocab.tokens[i]);
        if (!bytes || bytes->empty()) {
            ++unmapped;
            continue;
        }
        tokens_.insert(*bytes, id);
    }

    std::unordered_map<std::string, std::int32_t> extra_index;
    auto symbol_of = [&](const std::string& bytes) {
        const std::int32_t id = tokens_.find(bytes);
        if (id >= 0) return id;
        const auto [it, added] = extra_index.try_emplace(
            bytes, n_tokens_ + static_cast<std::int32_t>(extra_symbols_.size()));
        if (added) extra_symbols_.push_back(bytes);
        return it->second;
    };

    merges_ = std::make_unique<PairTable>(vocab.merges.size());
    std::size_t malformed = 0;
    for (std::size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        const std::string_view merge = vocab.merges[rank];
        const std::size_t space = merge.find(' ', 1);
        if (space == std::string_view::npos) {
            ++malformed;
            continue;
        }
        const auto left = gpt2_string_to_bytes(merge.substr(0, space));
        const auto right = gpt2_string_to_bytes(merge.substr(space + 1));
        if (!left || !right || left->empty() || right->empty()) {
            ++malformed;
            continue;
        }
        merges_->insert(pair_key(symbol_of(*left), symbol_of(*right)),
                        static_cast<std::int32_t>(rank), symbol_of(*left + *right));
    }

    int missing_bytes = 0;
    for (unsigned b = 0; b < 256; ++b) {
        byte_symbols_[b] = symbol_of(std::string(1, static_cast<char>(b)));
        missing_bytes += byte_symbols_[b] >= n_tokens_;
    }
    if (malformed > 0)
        log->warn("{} of {} merges are not of the form 'left right' in GPT-2's byte encoding; "
                  "they are ignored",
                  malformed, vocab.merges.size());
    if (unmapped > 0)
        log->debug("{} normal tokens are not in GPT-2's byte encoding; they decode as their text "
                   "and are never produced by merges",
                   unmapped);
    if (missing_bytes > 0)
        log->warn("{} of the 256 bytes have no token of their own; text holding them {}",
                  missing_bytes, unk_ >= 0 ? "gets the unknown token" : "loses those bytes");
    log->debug("byte-level BPE: {} merges, pre-tokenizer {}{}, {} symbols beyond the vocabulary",
               vocab.merges.size(), to_string(pre_.kind),
               pre_.ignore_merges ? " (whole-word lookup first)" : "", extra_symbols_.size());
}

BpeTokenizer::~BpeTokenizer() = default;

void BpeTokenizer::encode(std::string_view text, bool /*after_special*/,
                          std::vector<std::int32_t>& out) const {
    Workspace ws;
    auto encode_one = [&](std::string_view word) {
        if (word.size() == 1) {
            emit_symbol(byte_symbols_[static_cast<std::uint8_t>(word[0])], out);
            return;
        }
        // A word seen before in this text copies the ids of its first occurrence.
        const std::size_t begin = out.size();
        const auto [seen, first_time] = ws.seen.try_emplace(word, WordIds{begin, 0});
        if (first_time) {
            encode_word(word, ws, out);
            seen->second.count = out.size() - begin;
            return;
        }
        const WordIds ids = seen->second;
        out.resize(begin + ids.count);
        std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(ids.offset), ids.count,
                    out.begin() + static_cast<std::ptrdiff_t>(begin));
    };
    pre_tokenize(pre_.kind, text, WordSink(encode_one));
}

void BpeTokenizer::encode_word(std::string_view word, Workspace& ws,
                               std::vector<std::int32_t>& out) const {
    if (pre_.ignore_merges) {
        const std::int32_t id = tokens_.find(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    if (word.size() <= kShortWord) {
        encode_short_word(word, out);
        return;
    }
    auto& symbols = ws.symbols;
    auto& heap = ws.heap;
    symbols.clear();
    heap.clear();
    const auto n = static_cast<std::int32_t>(word.size());
    for (std::int32_t i = 0; i < n; ++i)
        symbols.push_back({byte_symbols_[static_cast<std::uint8_t>(word[static_cast<std::size_t>(i)])],
                           i - 1, i + 1 < n ? i + 1 : -1});

    auto try_pair = [&](std::int32_t left, std::int32_t right) {
        if (left < 0 || right < 0) return;
        const std::int32_t left_id = symbols[static_cast<std::size_t>(left)].id;
        const std::int32_t right_id = symbols[static_cast<std::size_t>(right)].id;
        const PairTable::Entry* merge = merges_->find(pair_key(left_id, right_id));
        if (!merge) return;
        heap.push_back({merge->rank, left, right, left_id, right_id, merge->result});
        std::push_heap(heap.begin(), heap.end(), Workspace::Later{});
    };
    for (std::int32_t i = 1; i < n; ++i) try_pair(i - 1, i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), Workspace::Later{});
        const Workspace::Candidate c = heap.back();
        heap.pop_back();
        auto& left = symbols[static_cast<std::size_t>(c.left)];
        auto& right = symbols[static_cast<std::size_t>(c.right)];
        // Stale: a side merged with something else since this was queued.
        if (left.id != c.left_id || right.id != c.right_id || left.next != c.right) continue;
        left.id = c.result;
        left.next = right.next;
        if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = c.left;
        right.id = -1;
        try_pair(left.prev, c.left);
        try_pair(c.left, left.next);
    }
    for (std::int32_t i = 0; i >= 0; i = symbols[static_cast<std::size_t>(i)].next)
        emit_symbol(symbols[static_cast<std::size_t>(i)].id, out);
}

// The same merges as the heap in encode_word, for the short words that are
// nearly all of them: symbols and the ranks of adjacent pairs in small
// arrays, the lowest rank found by a scan (strict <, so the leftmost wins).
void BpeTokenizer::encode_short_word(std::string_view word, std::vector<std::int32_t>& out) const {
    constexpr std::int32_t kNone = INT32_MAX;
    std::array<std::int32_t, kShortWord> ids;
    std::array<std::int32_t, kShortWord> ranks;   // of the pair (i, i + 1)
    std::array<std::int32_t, kShortWord> results; // its merged symbol
    auto n = static_cast<std::int32_t>(word.size());
    for (std::int32_t i = 0; i < n; ++i)
        ids[static_cast<std::size_t>(i)] = byte_symbols_[static_cast<std::uint8_t>(word[static_cast<std::size_t>(i)])];
    auto rank_pair = [&](std::int32_t i) {
        const auto u = static_cast<std::size_t>(i);
        const PairTable::Entry* merge = merges_->find(pair_key(ids[u], ids[u + 1]));
        ranks[u] = merge ? merge->rank : kNone;
        results[u] = merge ? merge->result : -1;
    };
    for (std::int32_t i = 0; i + 1 < n; ++i) rank_pair(i);
    while (n > 1) {
        std::int32_t best = 0;
        for (std::int32_t i = 1; i + 1 < n; ++i)
            if (ranks[static_cast<std::size_t>(i)] < ranks[static_cast<std::size_t>(best)]) best = i;
        const auto b = static_cast<std::size_t>(best);
        if (ranks[b] == kNone) break;
        ids[b] = results[b];
        // Drop symbol best + 1 and the pair (best, best + 1).
        const auto tail = static_cast<std::size_t>(n - best - 2);
        std::copy_n(ids.begin() + static_cast<std::ptrdiff_t>(b + 2), tail, ids.begin() + static_cast<std::ptrdiff_t>(b + 1));
        std::copy_n(ranks.begin() + static_cast<std::ptrdiff_t>(b + 2), tail > 0 ? tail - 1 : 0, ranks.begin() + static_cast<std::ptrdiff_t>(b + 1));
        std::copy_n(results.begin() + static_cast<std::ptrdiff_t>(b + 2), tail > 0 ? tail - 1 : 0, results.begin() + static_cast<std::ptrdiff_t>(b + 1));
        --n;
        if (best > 0) rank_pair(best - 1);
        if (best + 1 < n) rank_pair(best);
    }
    for (std::int32_t i = 0; i < n; ++i) emit_symbol(ids[static_cast<std::size_t>(i)], out);
}

void BpeTokenizer::emit_symbol(std::int32_t symbol, std::vector<std::int32_t>& out) const {
    if (symbol < n_tokens_) {
        out.push_back(symbol);
        return;
    }
    // A string that only merges form: its bytes' own tokens.
    for (const char c : extra_symbols_[static_cast<std::size_t>(symbol - n_tokens_)]) {
        const std::int32_t byte = byte_symbols_[static_cast<std::uint8_t>(c)];
        if (byte < n_tokens_)
            out.push_back(byte);
        else if (unk_ >= 0)
            out.push_back(unk_);
    }
}

} // namespace kvscope

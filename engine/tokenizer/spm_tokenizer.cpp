#include "engine/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

#include "engine/core/error.h"
#include "engine/tokenizer/utf8.h"

namespace kvscope {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81"; // U+2581 ▁

bool is_mergeable(TokenType type) {
    return type == TokenType::normal || type == TokenType::user_defined ||
           type == TokenType::unused;
}

bool all_space_symbols(std::string_view piece) {
    for (std::size_t i = 0; i < piece.size(); i += kSpaceSymbol.size())
        if (piece.substr(i, kSpaceSymbol.size()) != kSpaceSymbol) return false;
    return true;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    std::size_t pos = 0;
    for (std::size_t hit; (hit = text.find(from, pos)) != std::string_view::npos;
         pos = hit + from.size()) {
        out.append(text.substr(pos, hit - pos));
        out.append(to);
    }
    out.append(text.substr(pos));
    return out;
}

std::size_t count_mergeable(const Vocabulary& vocab) {
    std::size_t n = 0;
    for (const std::int32_t type : vocab.types) n += is_mergeable(static_cast<TokenType>(type));
    return n;
}

// Symbols are slices of the escaped text in a doubly linked list; a merge
// grows the left symbol and empties the right one. Offsets fit in 32 bits
// because encode() refuses larger texts.
struct SpmSymbol {
    std::uint32_t start;
    std::uint32_t length;
    std::int32_t prev;
    std::int32_t next;
};

// A candidate merge of two adjacent symbols into token `id`. `length` lets a
// stale candidate be recognized: once either side changed, the sum differs.
struct SpmPair {
    float score;
    std::int32_t left;
    std::int32_t right;
    std::uint32_t length;
    std::int32_t id;
};

struct SegmentIds {
    std::size_t offset;
    std::size_t count;
};

// Heap order: highest score first, then leftmost.
struct LowerPriority {
    bool operator()(const SpmPair& a, const SpmPair& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

} // namespace

std::optional<std::uint8_t> parse_byte_piece(std::string_view piece) {
    if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>')
        return std::nullopt;
    unsigned value = 0;
    const char* first = piece.data() + 3;
    const auto [end, ec] = std::from_chars(first, first + 2, value, 16);
    if (ec != std::errc() || end != first + 2) return std::nullopt;
    return static_cast<std::uint8_t>(value);
}

std::string spm_token_bytes(const Vocabulary& vocab, std::int32_t id) {
    const std::string& text = vocab.tokens[static_cast<std::size_t>(id)];
    switch (static_cast<TokenType>(vocab.types[static_cast<std::size_t>(id)])) {
    case TokenType::normal: return replace_all(text, kSpaceSymbol, " ");
    case TokenType::user_defined: return text;
    case TokenType::byte: return std::string(1, static_cast<char>(*parse_byte_piece(text)));
    default: return {};
    }
}

// Scratch memory of one encode() call, reused across its segments.
struct SpmTokenizer::Workspace {
    std::vector<SpmSymbol> symbols;
    std::vector<SpmPair> heap;
    // (start << 32 | length) of a merged unused piece -> length of its left
    // part, so that emit() can split it again as sentencepiece does.
    std::unordered_map<std::uint64_t, std::uint32_t> unused_splits;
    bool last_was_unknown = false; // runs of unknown symbols give one UNK
    // Where the ids of each segment seen so far lie in the output.
    std::unordered_map<std::string_view, SegmentIds> segments;
};

SpmTokenizer::SpmTokenizer(const Vocabulary& vocab)
    : pieces_(count_mergeable(vocab)), types_(vocab.types.size()), unk_(vocab.unk),
      add_space_prefix_(vocab.add_space_prefix), split_at_spaces_(true) {
    byte_ids_.fill(-1);
    for (unsigned c = 0; c < 0x80; ++c) isolated_[c] = true;
    int n_bytes = 0;
    for (std::size_t i = 0; i < vocab.tokens.size(); ++i) {
        const auto id = static_cast<std::int32_t>(i);
        const std::string& piece = vocab.tokens[i];
        types_[i] = static_cast<TokenType>(vocab.types[i]);
        if (types_[i] == TokenType::byte) {
            const auto byte = parse_byte_piece(piece);
            if (!byte)
                throw Error("token " + std::to_string(id) + " '" + piece +
                            "' has type byte but is not of the form <0xNN>");
            if (byte_ids_[*byte] < 0) ++n_bytes;
            byte_ids_[*byte] = id;
        }
        if (!is_mergeable(types_[i]) || piece.empty()) continue;
        pieces_.insert(piece, id);
        if (piece.size() > 1)
            for (const char c : piece) isolated_[static_cast<std::uint8_t>(c)] = false;
        if (piece.find(kSpaceSymbol, 1) != std::string::npos && !all_space_symbols(piece))
            split_at_spaces_ = false;
    }
    scores_ = vocab.scores;
    byte_fallback_ = n_bytes == 256;
    if (!byte_fallback_ && unk_ < 0)
        throw Error("the vocabulary has " + std::to_string(n_bytes) +
                    " of the 256 byte tokens <0x00>..<0xFF> and no unknown token, "
                    "so text outside it cannot be encoded");
}

void SpmTokenizer::encode(std::string_view text, bool after_special,
                          std::vector<std::int32_t>& out) const {
    if (text.size() >= std::numeric_limits<std::uint32_t>::max() / 4)
        throw Error("text of " + std::to_string(text.size()) + " bytes is too long to encode");
    std::string escaped = after_special && add_space_prefix_ ? std::string(kSpaceSymbol) : "";
    escaped += replace_all(text, " ", kSpaceSymbol);

    Workspace ws;
    std::string_view rest = escaped;
    while (!rest.empty()) {
        const std::string_view segment = rest.substr(0, next_segment_end(rest));
        rest.remove_prefix(segment.size());
        if (byte_fallback_)
            encode_segment_cached(segment, ws, out);
        else
            encode_segment(segment, ws, out);
    }
}

// A segment's ids depend on its text alone (with byte fallback no UNK run
// continues into the next one), and text repeats its words: a repeat copies
// the ids of the first occurrence.
void SpmTokenizer::encode_segment_cached(std::string_view segment, Workspace& ws,
                                         std::vector<std::int32_t>& out) const {
    const std::size_t begin = out.size();
    const auto [seen, first_time] = ws.segments.try_emplace(segment, SegmentIds{begin, 0});
    if (first_time) {
        encode_segment(segment, ws, out);
        seen->second.count = out.size() - begin;
        return;
    }
    const SegmentIds ids = seen->second;
    out.resize(begin + ids.count);
    std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(ids.offset), ids.count,
                out.begin() + static_cast<std::ptrdiff_t>(begin));
}

// Cutting the text where no piece can span keeps the heap and the symbol
// list small and lets repeated segments be copied. No piece spans
// - either side of an ASCII character that no longer piece contains ("\n",
//   digits and "\t" in Llama 2);
// - the start of a "▁" that follows something other than "▁", when no piece
//   has "▁" inside except runs of "▁" (Llama 2, tok512), since that piece
//   would contain "x▁".
// Merging each segment on its own then gives the same result.
std::size_t SpmTokenizer::next_segment_end(std::string_view text) const {
    if (isolated_[static_cast<std::uint8_t>(text[0])]) return 1;
    for (std::size_t pos = 1; pos < text.size(); ++pos) {
        if (isolated_[static_cast<std::uint8_t>(text[pos])]) return pos;
        if (split_at_spaces_ && text.substr(pos, kSpaceSymbol.size()) == kSpaceSymbol &&
            (pos < kSpaceSymbol.size() ||
             text.substr(pos - kSpaceSymbol.size(), kSpaceSymbol.size()) != kSpaceSymbol))
            return pos;
    }
    return text.size();
}

void SpmTokenizer::encode_segment(std::string_view text, Workspace& ws,
                                  std::vector<std::int32_t>& out) const {
    auto& symbols = ws.symbols;
    symbols.clear();
    ws.heap.clear();
    ws.unused_splits.clear();
    // Start from single characters; an ill-formed byte sequence is a symbol
    // of its own and ends up as byte tokens.
    for (std::size_t pos = 0; pos < text.size();) {
        const auto length = static_cast<std::uint32_t>(utf8::scan(text.substr(pos)).length);
        const auto index = static_cast<std::int32_t>(symbols.size());
        symbols.push_back({static_cast<std::uint32_t>(pos), length, index - 1, index + 1});
        pos += length;
    }
    symbols.back().next = -1;
    for (std::size_t i = 1; i < symbols.size(); ++i)
        try_add_pair(text, ws, static_cast<std::int32_t>(i - 1), static_cast<std::int32_t>(i));

    while (!ws.heap.empty()) {
        std::pop_heap(ws.heap.begin(), ws.heap.end(), LowerPriority{});
        const SpmPair pair = ws.heap.back();
        ws.heap.pop_back();
        SpmSymbol& left = symbols[static_cast<std::size_t>(pair.left)];
        SpmSymbol& right = symbols[static_cast<std::size_t>(pair.right)];
        if (left.length == 0 || right.length == 0 || left.length + right.length != pair.length)
            continue; // a side was merged since this pair was queued
        if (types_[static_cast<std::size_t>(pair.id)] == TokenType::unused)
            ws.unused_splits[std::uint64_t{left.start} << 32 | pair.length] = left.length;
        left.length = pair.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[static_cast<std::size_t>(right.next)].prev = pair.left;
        try_add_pair(text, ws, left.prev, pair.left);
        try_add_pair(text, ws, pair.left, left.next);
    }

    for (std::int32_t i = 0; i != -1; i = symbols[static_cast<std::size_t>(i)].next) {
        const SpmSymbol& s = symbols[static_cast<std::size_t>(i)];
        emit(text, s.start, s.length, ws, out);
    }
}

void SpmTokenizer::try_add_pair(std::string_view text, Workspace& ws, std::int32_t left,
                                std::int32_t right) const {
    if (left < 0 || right < 0) return;
    const SpmSymbol& l = ws.symbols[static_cast<std::size_t>(left)];
    const SpmSymbol& r = ws.symbols[static_cast<std::size_t>(right)];
    const std::uint32_t length = l.length + r.length;
    const std::int32_t id = pieces_.find(text.substr(l.start, length));
    if (id < 0) return;
    ws.heap.push_back({scores_[static_cast<std::size_t>(id)], left, right, length, id});
    std::push_heap(ws.heap.begin(), ws.heap.end(), LowerPriority{});
}

void SpmTokenizer::emit(std::string_view text, std::uint32_t start, std::uint32_t length,
                        Workspace& ws, std::vector<std::int32_t>& out) const {
    const std::string_view piece = text.substr(start, length);
    const std::int32_t id = pieces_.find(piece);
    if (id < 0) {
        emit_unknown(piece, ws, out);
        return;
    }
    if (types_[static_cast<std::size_t>(id)] == TokenType::unused) {
        const auto split = ws.unused_splits.find(std::uint64_t{start} << 32 | length);
        if (split != ws.unused_splits.end()) {
            emit(text, start, split->second, ws, out);
            emit(text, start + split->second, length - split->second, ws, out);
            return;
        }
    }
    out.push_back(id);
    ws.last_was_unknown = false;
}

void SpmTokenizer::emit_unknown(std::string_view piece, Workspace& ws,
                                std::vector<std::int32_t>& out) const {
    if (byte_fallback_) {
        for (const char c : piece) out.push_back(byte_ids_[static_cast<std::uint8_t>(c)]);
        return;
    }
    if (!ws.last_was_unknown) out.push_back(unk_);
    ws.last_was_unknown = true;
}

} // namespace kvscope

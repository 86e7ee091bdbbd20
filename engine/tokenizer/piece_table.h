// engine/tokenizer: exact lookup of token strings, the inner loop of BPE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

// A fixed-size open-addressing hash table over one byte arena: a lookup is
// one hash and usually one cache line, several times faster than
// std::unordered_map<std::string, ...> for the short, mostly failing
// lookups of pair merging.
class PieceTable {
public:
    // Room for `capacity` pieces; inserting more throws std::logic_error,
    // more than 4 GiB of text std::length_error.
    explicit PieceTable(std::size_t capacity = 0);

    // Adds or replaces the id of `piece` (a later id wins, as in llama.cpp).
    void insert(std::string_view piece, std::int32_t id);

    // The id of `piece`, or -1.
    std::int32_t find(std::string_view piece) const;

private:
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t offset = 0; // into arena_
        std::uint32_t length = 0;
        std::int32_t id = -1;     // -1: empty
    };

    std::size_t slot_of(std::string_view piece, std::uint64_t hash) const;

    std::vector<Slot> slots_;
    std::string arena_;
    std::size_t capacity_;
    std::size_t size_ = 0;
    std::size_t max_length_ = 0; // longer strings are absent without hashing
};

} // namespace kvscope

#include "engine/tokenizer/piece_table.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <cstring>
#include <stdexcept>

namespace kvscope {
namespace {

// Eight bytes at a time with a multiply-xorshift mix: strong enough for
// token strings, and cheap for the 2..16 byte strings looked up most.
std::uint64_t hash_bytes(std::string_view s) {
    constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
    std::uint64_t h = s.size() * kMul;
    std::size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        std::uint64_t chunk;
        std::memcpy(&chunk, s.data() + i, 8);
        h = (h ^ chunk) * kMul;
        h ^= h >> 29;
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * kMul;
    h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
    return h;
}

} // namespace

PieceTable::PieceTable(std::size_t capacity)
    : slots_(std::bit_ceil(2 * capacity + 1)), capacity_(capacity) {}

std::size_t PieceTable::slot_of(std::string_view piece, std::uint64_t hash) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
        const Slot& slot = slots_[i];
        if (slot.id < 0) return i;
        if (slot.hash == hash && slot.length == piece.size() &&
            std::memcmp(arena_.data() + slot.offset, piece.data(), piece.size()) == 0)
            return i;
    }
}

void PieceTable::insert(std::string_view piece, std::int32_t id) {
    const std::uint64_t hash = hash_bytes(piece);
    Slot& slot = slots_[slot_of(piece, hash)];
    if (slot.id < 0) {
        if (size_ == capacity_) throw std::logic_error("PieceTable is full");
        if (arena_.size() + piece.size() > std::numeric_limits<std::uint32_t>::max())
            throw std::length_error("PieceTable holds more than 4 GiB of text");
        ++size_;
        slot = {hash, static_cast<std::uint32_t>(arena_.size()),
                static_cast<std::uint32_t>(piece.size()), id};
        arena_.append(piece);
        max_length_ = std::max(max_length_, piece.size());
    }
    slot.id = id;
}

std::int32_t PieceTable::find(std::string_view piece) const {
    if (piece.size() > max_length_) return -1;
    return slots_[slot_of(piece, hash_bytes(piece))].id;
}

} // namespace kvscope

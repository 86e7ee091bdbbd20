// net/attach: vLLM's KV event batches from msgpack (kv_events.h).
#include "net/attach/kv_events.h"

#include <algorithm>
#include <array>
#include <exception>
#include <limits>
#include <span>

#include <msgpack.hpp>

namespace kvscope::attach {
namespace {

using Object = msgpack::object;
namespace type = msgpack::type;

[[noreturn]] void fail(std::string_view what, std::string_view found) {
    throw KvEventsError("vLLM KV event batch: " + std::string(what) + ": " + std::string(found));
}

std::string_view type_name(const Object& o) {
    switch (o.type) {
    case type::NIL: return "nil";
    case type::BOOLEAN: return "a boolean";
    case type::POSITIVE_INTEGER:
    case type::NEGATIVE_INTEGER: return "an integer";
    case type::FLOAT32:
    case type::FLOAT64: return "a float";
    case type::STR: return "a string";
    case type::BIN: return "bytes";
    case type::ARRAY: return "an array";
    case type::MAP: return "a map";
    case type::EXT: return "an extension value";
    }
    return "an unknown msgpack type";
}

[[noreturn]] void wrong_type(std::string_view field, std::string_view expected, const Object& found) {
    fail(std::string(field) + " should be " + std::string(expected), std::string("found ") + std::string(type_name(found)));
}

std::string_view as_str(const Object& o, std::string_view field) {
    if (o.type != type::STR)
        wrong_type(field, "a string", o);
    return {o.via.str.ptr, o.via.str.size};
}

std::span<const Object> as_array(const Object& o, std::string_view field) {
    if (o.type != type::ARRAY)
        wrong_type(field, "an array", o);
    return {o.via.array.ptr, o.via.array.size};
}

// The last (up to) 8 bytes, big-endian: the integer mode's key (kv_events.h).
BlockHash hash_of_bytes(const Object& o, std::string_view field) {
    if (o.via.bin.size == 0)
        fail(field, "an empty bytes hash");
    const std::size_t n = std::min<std::size_t>(o.via.bin.size, 8);
    const auto* tail = reinterpret_cast<const unsigned char*>(o.via.bin.ptr) + (o.via.bin.size - n);
    BlockHash h = 0;
    for (std::size_t i = 0; i < n; ++i)
        h = (h << 8) | tail[i];
    return h;
}

BlockHash as_hash(const Object& o, std::string_view field) {
    switch (o.type) {
    case type::POSITIVE_INTEGER: return o.via.u64;
    case type::NEGATIVE_INTEGER: return static_cast<BlockHash>(o.via.i64); // two's complement, as & (2^64-1) would give
    case type::BIN: return hash_of_bytes(o, field);
    default: wrong_type(field, "an integer or bytes hash", o);
    }
}

std::vector<BlockHash> as_hashes(const Object& o, std::string_view field) {
    std::vector<BlockHash> hashes;
    const auto items = as_array(o, field);
    hashes.reserve(items.size());
    for (const Object& item : items)
        hashes.push_back(as_hash(item, field));
    return hashes;
}

std::int64_t as_int(const Object& o, std::string_view field) {
    if (o.type == type::NEGATIVE_INTEGER)
        return o.via.i64;
    if (o.type == type::POSITIVE_INTEGER && o.via.u64 <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return static_cast<std::int64_t>(o.via.u64);
    wrong_type(field, "an integer in int64 range", o);
}

std::uint32_t as_u32(const Object& o, std::string_view field) {
    if (o.type != type::POSITIVE_INTEGER || o.via.u64 > std::numeric_limits<std::uint32_t>::max())
        wrong_type(field, "a non-negative 32-bit integer", o);
    return static_cast<std::uint32_t>(o.via.u64);
}

double as_seconds(const Object& o, std::string_view field) {
    switch (o.type) {
    case type::FLOAT32:
    case type::FLOAT64: return o.via.f64;
    case type::POSITIVE_INTEGER: return static_cast<double>(o.via.u64);
    case type::NEGATIVE_INTEGER: return static_cast<double>(o.via.i64);
    default: wrong_type(field, "a number", o);
    }
}

// The fields of one struct, whichever way it came: a map by name, or an
// array in declared order (the first `skip` items are not fields: the tag).
class Fields {
public:
    Fields(const Object& o, std::span<const std::string_view> declared, std::size_t skip)
        : object_(o), declared_(declared), skip_(skip) {}

    const Object* find(std::string_view name) const {
        if (object_.type == type::MAP) {
            for (const auto& kv : std::span(object_.via.map.ptr, object_.via.map.size))
                if (kv.key.type == type::STR && std::string_view(kv.key.via.str.ptr, kv.key.via.str.size) == name)
                    return &kv.val;
            return nullptr;
        }
        const auto at = std::find(declared_.begin(), declared_.end(), name);
        if (at == declared_.end())
            return nullptr;
        const std::size_t index = skip_ + static_cast<std::size_t>(at - declared_.begin());
        return index < object_.via.array.size ? &object_.via.array.ptr[index] : nullptr;
    }

    // nullptr for a field that is absent or nil (msgspec's None).
    const Object* value(std::string_view name) const {
        const Object* o = find(name);
        return o != nullptr && o->type != type::NIL ? o : nullptr;
    }

    const Object& required(std::string_view name, std::string_view owner) const {
        const Object* o = value(name);
        if (o == nullptr)
            fail(std::string(owner) + "." + std::string(name), "missing");
        return *o;
    }

    std::optional<std::string> optional_str(std::string_view name) const {
        const Object* o = value(name);
        return o != nullptr ? std::optional<std::string>(as_str(*o, name)) : std::nullopt;
    }

    std::optional<std::int64_t> optional_int(std::string_view name) const {
        const Object* o = value(name);
        return o != nullptr ? std::optional<std::int64_t>(as_int(*o, name)) : std::nullopt;
    }

private:
    const Object& object_;
    std::span<const std::string_view> declared_;
    std::size_t skip_;
};

// Field order as vLLM declares them (array mode depends on it).
constexpr std::array<std::string_view, 11> kStoredFields{
    "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
    "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind", "kv_cache_spec_sliding_window"};
constexpr std::array<std::string_view, 3> kRemovedFields{"block_hashes", "medium", "group_idx"};
constexpr std::array<std::string_view, 3> kBatchFields{"ts", "events", "data_parallel_rank"};

BlockStored decode_stored(const Fields& f) {
    BlockStored e;
    e.hashes = as_hashes(f.required("block_hashes", "BlockStored"), "BlockStored.block_hashes");
    if (const Object* parent = f.value("parent_block_hash"))
        e.parent = as_hash(*parent, "BlockStored.parent_block_hash");
    if (const Object* tokens = f.value("token_ids"))
        e.tokens = as_array(*tokens, "BlockStored.token_ids").size();
    if (const Object* size = f.value("block_size"))
        e.block_size = as_u32(*size, "BlockStored.block_size");
    e.medium = f.optional_str("medium");
    e.lora_name = f.optional_str("lora_name");
    e.group_idx = f.optional_int("group_idx");
    e.kv_cache_spec_kind = f.optional_str("kv_cache_spec_kind");
    e.kv_cache_spec_sliding_window = f.optional_int("kv_cache_spec_sliding_window");
    return e;
}

BlockRemoved decode_removed(const Fields& f) {
    BlockRemoved e;
    e.hashes = as_hashes(f.required("block_hashes", "BlockRemoved"), "BlockRemoved.block_hashes");
    e.medium = f.optional_str("medium");
    e.group_idx = f.optional_int("group_idx");
    return e;
}

std::string_view tag_of(const Object& event) {
    if (event.type == type::ARRAY) {
        if (event.via.array.size == 0)
            fail("event", "an empty array (no type tag)");
        return as_str(event.via.array.ptr[0], "event type tag");
    }
    if (event.type == type::MAP) {
        const Fields f(event, {}, 0);
        const Object* tag = f.find("type");
        if (tag == nullptr)
            fail("event", "a map without a \"type\" key");
        return as_str(*tag, "event type");
    }
    wrong_type("event", "a tagged array or a map", event);
}

// Adds the event to the batch, or its type to unknown_types.
void decode_event(const Object& event, KvEventBatch& batch) {
    const std::string_view tag = tag_of(event);
    if (tag == "BlockStored")
        batch.events.emplace_back(decode_stored(Fields(event, kStoredFields, 1)));
    else if (tag == "BlockRemoved")
        batch.events.emplace_back(decode_removed(Fields(event, kRemovedFields, 1)));
    else if (tag == "AllBlocksCleared")
        batch.events.emplace_back(AllBlocksCleared{});
    else if (std::find(batch.unknown_types.begin(), batch.unknown_types.end(), tag) == batch.unknown_types.end())
        batch.unknown_types.emplace_back(tag);
}

KvEventBatch decode_batch(const Object& root) {
    if (root.type != type::ARRAY && root.type != type::MAP)
        wrong_type("batch", "an array or a map", root);
    const Fields f(root, kBatchFields, 0);
    KvEventBatch batch;
    batch.ts = as_seconds(f.required("ts", "batch"), "batch.ts");
    const auto events = as_array(f.required("events", "batch"), "batch.events");
    batch.events.reserve(events.size());
    for (const Object& event : events)
        decode_event(event, batch);
    batch.data_parallel_rank = f.optional_int("data_parallel_rank");
    return batch;
}

// msgpack-c allocates a container's items when it reads the header, before
// they arrive: every claim is bounded, by the payload's length (an item
// takes at least a byte) and by a limit no vLLM batch comes near, so a
// hostile header costs at most kMaxDepth * kMaxItems objects.
constexpr std::size_t kMaxItems = std::size_t{1} << 20; // items in one array (token_ids of one event)
constexpr std::size_t kMaxKeys = 1024;                  // keys in one map (vLLM's structs have ~12)
constexpr std::size_t kMaxDepth = 8;                    // batch > events > event > extra_keys > tuple > ...

msgpack::unpack_limit limits_for(std::size_t size) {
    return {std::min(size, kMaxItems), std::min(size, kMaxKeys), size, size, size, kMaxDepth};
}

} // namespace

KvEventBatch decode_kv_event_batch(std::string_view payload) {
    if (payload.empty())
        fail("payload", "empty");
    msgpack::object_handle handle;
    std::size_t offset = 0;
    try {
        handle = msgpack::unpack(payload.data(), payload.size(), offset, nullptr, nullptr, limits_for(payload.size()));
    } catch (const std::exception& e) {
        fail("not msgpack (" + std::to_string(payload.size()) + " bytes)", e.what());
    }
    if (offset != payload.size())
        fail("payload", std::to_string(payload.size() - offset) + " bytes after the batch");
    return decode_batch(handle.get());
}

bool is_gpu_medium(const std::optional<std::string>& medium) {
    return !medium.has_value() || *medium == "GPU";
}

} // namespace kvscope::attach

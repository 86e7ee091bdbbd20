#include "engine/snapshot_json.h"

#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace kvscope {
namespace {

using Json = nlohmann::ordered_json;

// Every FragmentationStats field is written below: a new one must be added
// there, in read_fragmentation and in docs/snapshot.md.
static_assert(sizeof(FragmentationStats) == 11 * sizeof(std::size_t),
              "FragmentationStats changed: update snapshot_json.cpp and docs/snapshot.md");

std::string_view word(MemoryPlace place) { return place == MemoryPlace::Cuda ? "cuda" : "host"; }

std::string_view word(BlockState state) {
    switch (state) {
    case BlockState::Free: return "free";
    case BlockState::Used: return "used";
    case BlockState::Shared: return "shared";
    case BlockState::Reserved: return "reserved";
    case BlockState::CachedFree: return "cached_free";
    }
    return "?";
}

std::string_view word(SeqStatus status) { return to_string(status); }

Json optional_value(const auto& value) { return value ? Json(*value) : Json(nullptr); }

Json to_json(const DeviceSnapshot& d) {
    return {{"backend", std::string(to_string(d.backend))},
            {"kv_memory", std::string(word(d.kv_memory))},
            {"name", optional_value(d.name)},
            {"memory_total", optional_value(d.memory_total)},
            {"memory_free", optional_value(d.memory_free)}};
}

Json to_json(const Percentiles& p) {
    return {{"p50_ms", p.p50_ms}, {"p90_ms", p.p90_ms}, {"p95_ms", p.p95_ms}, {"p99_ms", p.p99_ms}};
}

Json to_json(const SeqSnapshot& s) {
    return {{"seq", s.seq},
            {"request", s.request},
            {"index", s.index},
            {"status", std::string(word(s.status))},
            {"prompt_tokens", s.prompt_tokens},
            {"generated", s.generated},
            {"queue_position", optional_value(s.queue_position)},
            {"client_tag", s.client_tag}};
}

Json to_json(const EndedSeq& e) {
    return {{"seq", e.seq}, {"request", e.request}, {"client_tag", e.client_tag}};
}

// Groups travel as each layer's window: KvGroups::from_windows rebuilds them.
Json to_json(const KvLayout& l) {
    return {{"n_layers", l.geometry().n_layers},
            {"n_kv_heads", l.geometry().n_kv_heads},
            {"head_dim", l.geometry().head_dim},
            {"dtype", std::string(to_string(l.dtype()))},
            {"block_size", l.block_size()},
            {"layer_windows", l.groups().layer_windows()},
            {"keep_whole", l.groups().keeps_whole()}};
}

Json block_json(const PoolSnapshot& pool, BlockId id) {
    const BlockInfo& b = pool.blocks[id];
    const auto owners = pool.owners_of(id);
    return {{"state", std::string(word(b.state))},
            {"fill", b.fill},
            {"ref_count", b.ref_count},
            {"owners", std::vector<SeqId>(owners.begin(), owners.end())},
            {"last_holder", optional_value(b.last_holder)},
            {"group", b.group},
            {"left_window", b.left_window}};
}

Json to_json(const SequenceInfo& s) {
    return {{"id", s.id},
            {"num_tokens", s.num_tokens},
            {"capacity_tokens", s.capacity_tokens},
            {"max_tokens", s.max_tokens},
            {"cached_prefix_tokens", s.cached_prefix_tokens},
            {"swapped", s.swapped},
            {"blocks", s.blocks},
            {"group_blocks", s.group_blocks},
            {"left_window_blocks", s.left_window_blocks},
            {"internal_waste_slots", s.internal_waste_slots},
            {"reserved_waste_slots", s.reserved_waste_slots}};
}

Json to_json(const FragmentationStats& f) {
    return {{"total_blocks", f.total_blocks},
            {"block_size", f.block_size},
            {"used_blocks", f.used_blocks},
            {"free_blocks", f.free_blocks},
            {"cached_free_blocks", f.cached_free_blocks},
            {"token_slots", f.token_slots},
            {"internal_waste_slots", f.internal_waste_slots},
            {"reserved_waste_slots", f.reserved_waste_slots},
            {"external_blocks", f.external_blocks},
            {"largest_free_run", f.largest_free_run},
            {"pending_request_blocks", f.pending_request_blocks}};
}

Json to_json(const PoolSnapshot& p) {
    Json blocks = Json::array();
    for (BlockId b = 0; b < p.blocks.size(); ++b)
        blocks.push_back(block_json(p, b));
    Json sequences = Json::array();
    for (const SequenceInfo& s : p.sequences)
        sequences.push_back(to_json(s));
    return {{"mode", std::string(to_string(p.mode))},
            {"layout", to_json(p.layout)},
            {"chunk_tokens", p.chunk_tokens},
            {"blocks", std::move(blocks)},
            {"sequences", std::move(sequences)},
            {"fragmentation", to_json(p.fragmentation)},
            {"swap_blocks_total", p.swap_blocks_total},
            {"swap_blocks_used", p.swap_blocks_used},
            {"prefix_hit_tokens", p.prefix_hit_tokens},
            {"prefix_query_tokens", p.prefix_query_tokens},
            {"tail_bytes", p.tail_bytes}};
}

// Reading: every key must be there; `at` names the key when it is not.

const Json& at(const Json& j, const char* key) {
    if (!j.is_object())
        throw Error(std::string("snapshot JSON: expected an object holding '") + key + "', found " +
                    std::string(j.type_name()));
    if (!j.contains(key))
        throw Error(std::string("snapshot JSON: '") + key + "' is missing");
    return j.at(key);
}

const Json& array_at(const Json& j, const char* key) {
    const Json& value = at(j, key);
    if (!value.is_array())
        throw Error(std::string("snapshot JSON: '") + key + "' is not an array");
    return value;
}

template <typename T>
T read(const Json& j, const char* key) {
    const Json& value = at(j, key);
    try {
        return value.get<T>();
    } catch (const nlohmann::json::exception&) {
        throw Error(std::string("snapshot JSON: '") + key + "' has the wrong type (" + value.dump() + ")");
    }
}

template <typename T>
std::optional<T> read_optional(const Json& j, const char* key) {
    return at(j, key).is_null() ? std::nullopt : std::optional<T>(read<T>(j, key));
}

template <typename E>
E read_word(const Json& j, const char* key, std::initializer_list<E> all) {
    const auto w = read<std::string>(j, key);
    for (E e : all)
        if (word(e) == w)
            return e;
    throw Error("snapshot JSON: '" + std::string(key) + "' is \"" + w + "\", not a word kvscope knows");
}

DeviceSnapshot read_device(const Json& j) {
    DeviceSnapshot d;
    d.backend = parse_backend(read<std::string>(j, "backend"));
    d.kv_memory = read_word(j, "kv_memory", {MemoryPlace::Host, MemoryPlace::Cuda});
    d.name = read_optional<std::string>(j, "name");
    d.memory_total = read_optional<std::uint64_t>(j, "memory_total");
    d.memory_free = read_optional<std::uint64_t>(j, "memory_free");
    return d;
}

Percentiles read_percentiles(const Json& j) {
    return {read<double>(j, "p50_ms"), read<double>(j, "p90_ms"), read<double>(j, "p95_ms"), read<double>(j, "p99_ms")};
}

SeqSnapshot read_seq(const Json& j) {
    SeqSnapshot s;
    s.seq = read<SeqId>(j, "seq");
    s.request = read<RequestId>(j, "request");
    s.index = read<std::uint32_t>(j, "index");
    s.status = read_word(j, "status", {SeqStatus::Waiting, SeqStatus::Running, SeqStatus::Swapped});
    s.prompt_tokens = read<std::uint32_t>(j, "prompt_tokens");
    s.generated = read<std::uint32_t>(j, "generated");
    s.queue_position = read_optional<std::uint32_t>(j, "queue_position");
    s.client_tag = read<std::uint64_t>(j, "client_tag");
    return s;
}

EndedSeq read_ended_seq(const Json& j) {
    return {read<SeqId>(j, "seq"), read<RequestId>(j, "request"), read<std::uint64_t>(j, "client_tag")};
}

KvLayout read_layout(const Json& j) {
    const KvGeometry geometry{read<std::uint32_t>(j, "n_layers"), read<std::uint32_t>(j, "n_kv_heads"),
                              read<std::uint32_t>(j, "head_dim")};
    const auto windows = read<std::vector<std::uint32_t>>(j, "layer_windows");
    if (windows.size() != geometry.n_layers)
        throw Error("snapshot JSON: layer_windows has " + std::to_string(windows.size()) + " entries for " +
                    std::to_string(geometry.n_layers) + " layers");
    return KvLayout(geometry, parse_kv_dtype(read<std::string>(j, "dtype")), read<std::uint32_t>(j, "block_size"),
                    KvGroups::from_windows(windows, read<bool>(j, "keep_whole")));
}

// Appends the block's owners to `owners`, where its owner_begin points.
BlockInfo read_block(const Json& j, const KvLayout& layout, std::vector<SeqId>& owners) {
    const std::uint32_t block_size = layout.block_size();
    BlockInfo b;
    b.state = read_word(j, "state", {BlockState::Free, BlockState::Used, BlockState::Shared, BlockState::Reserved,
                                     BlockState::CachedFree});
    b.fill = read<std::uint16_t>(j, "fill");
    b.ref_count = read<std::uint32_t>(j, "ref_count");
    const auto own = read<std::vector<SeqId>>(j, "owners");
    b.owner_begin = static_cast<std::uint32_t>(owners.size());
    b.owner_count = static_cast<std::uint32_t>(own.size());
    owners.insert(owners.end(), own.begin(), own.end());
    b.last_holder = read_optional<SeqId>(j, "last_holder");
    b.group = read<std::uint16_t>(j, "group");
    b.left_window = read<bool>(j, "left_window");
    if (b.group >= layout.num_groups())
        throw Error("snapshot JSON: a block of group " + std::to_string(b.group) + " in a pool of " +
                    std::to_string(layout.num_groups()) + " KV cache groups");
    if (b.last_holder && b.state != BlockState::CachedFree)
        throw Error("snapshot JSON: a " + std::string(word(b.state)) + " block names a last holder; only cached_free "
                    "blocks have one");
    if (b.fill > block_size)
        throw Error("snapshot JSON: a block holds " + std::to_string(b.fill) + " tokens, more than its " +
                    std::to_string(block_size) + " slots");
    return b;
}

SequenceInfo read_sequence(const Json& j, std::size_t num_blocks, std::size_t num_groups) {
    SequenceInfo s;
    s.id = read<SeqId>(j, "id");
    s.num_tokens = read<std::uint32_t>(j, "num_tokens");
    s.capacity_tokens = read<std::uint32_t>(j, "capacity_tokens");
    s.max_tokens = read<std::uint32_t>(j, "max_tokens");
    s.cached_prefix_tokens = read<std::uint32_t>(j, "cached_prefix_tokens");
    s.swapped = read<bool>(j, "swapped");
    s.blocks = read<std::vector<BlockId>>(j, "blocks");
    s.group_blocks = read<std::vector<std::uint32_t>>(j, "group_blocks");
    s.left_window_blocks = read<std::uint32_t>(j, "left_window_blocks");
    std::size_t grouped = 0;
    for (std::uint32_t n : s.group_blocks)
        grouped += n;
    if (s.group_blocks.size() != num_groups || grouped != s.blocks.size())
        throw Error("snapshot JSON: sequence " + std::to_string(s.id) + "'s group_blocks do not split its " +
                    std::to_string(s.blocks.size()) + " blocks into " + std::to_string(num_groups) + " groups");
    s.internal_waste_slots = read<std::size_t>(j, "internal_waste_slots");
    s.reserved_waste_slots = read<std::size_t>(j, "reserved_waste_slots");
    for (BlockId b : s.blocks)
        if (b >= num_blocks)
            throw Error("snapshot JSON: sequence " + std::to_string(s.id) + " holds block " + std::to_string(b) +
                        " of a pool of " + std::to_string(num_blocks));
    return s;
}

FragmentationStats read_fragmentation(const Json& j) {
    FragmentationStats f;
    f.total_blocks = read<std::size_t>(j, "total_blocks");
    f.block_size = read<std::size_t>(j, "block_size");
    f.used_blocks = read<std::size_t>(j, "used_blocks");
    f.free_blocks = read<std::size_t>(j, "free_blocks");
    f.cached_free_blocks = read<std::size_t>(j, "cached_free_blocks");
    f.token_slots = read<std::size_t>(j, "token_slots");
    f.internal_waste_slots = read<std::size_t>(j, "internal_waste_slots");
    f.reserved_waste_slots = read<std::size_t>(j, "reserved_waste_slots");
    f.external_blocks = read<std::size_t>(j, "external_blocks");
    f.largest_free_run = read<std::size_t>(j, "largest_free_run");
    f.pending_request_blocks = read<std::size_t>(j, "pending_request_blocks");
    return f;
}

std::shared_ptr<const PoolSnapshot> read_pool(const Json& j) {
    if (j.is_null())
        return nullptr;
    const KvLayout layout = read_layout(at(j, "layout"));
    std::vector<BlockInfo> blocks;
    std::vector<SeqId> owners;
    for (const Json& b : array_at(j, "blocks"))
        blocks.push_back(read_block(b, layout, owners));
    std::vector<SequenceInfo> sequences;
    for (const Json& s : array_at(j, "sequences")) {
        sequences.push_back(read_sequence(s, blocks.size(), layout.num_groups()));
        // EngineSnapshot::kv_row searches them by id.
        if (sequences.size() > 1 && sequences.end()[-2].id >= sequences.back().id)
            throw Error("snapshot JSON: pool sequences are not in ascending id order");
    }
    return std::make_shared<const PoolSnapshot>(PoolSnapshot{
        parse_allocation_mode(read<std::string>(j, "mode")), layout, read<std::uint32_t>(j, "chunk_tokens"),
        std::move(blocks), std::move(owners),
        std::move(sequences), read_fragmentation(at(j, "fragmentation")), read<std::uint32_t>(j, "swap_blocks_total"),
        read<std::uint32_t>(j, "swap_blocks_used"), read<std::uint64_t>(j, "prefix_hit_tokens"),
        read<std::uint64_t>(j, "prefix_query_tokens"), read<std::uint64_t>(j, "tail_bytes")});
}

} // namespace

Json to_json(const EngineSnapshot& s) {
    Json seqs = Json::array();
    for (const SeqSnapshot& seq : s.seqs)
        seqs.push_back(to_json(seq));
    Json ended = Json::array();
    for (const EndedSeq& e : s.ended_seqs)
        ended.push_back(to_json(e));
    return {{"schema_version", kSnapshotSchemaVersion},
            {"step", s.step},
            {"time_s", s.time_s},
            {"device", to_json(s.device)},
            {"pool", s.pool ? to_json(*s.pool) : Json(nullptr)},
            {"seqs", std::move(seqs)},
            {"ended_seqs", std::move(ended)},
            {"running", s.running},
            {"waiting", s.waiting},
            {"swapped", s.swapped},
            {"preemptions", s.preemptions},
            {"completed_requests", s.completed_requests},
            {"aborted_requests", s.aborted_requests},
            {"failed_requests", s.failed_requests},
            {"refused_requests", s.refused_requests},
            {"prompt_tokens", s.prompt_tokens},
            {"generated_tokens", s.generated_tokens},
            {"prompt_tokens_per_s", s.prompt_tokens_per_s},
            {"generation_tokens_per_s", s.generation_tokens_per_s},
            {"busy_s", s.busy_s},
            {"last_step_s", s.last_step_s},
            {"last_step_expert_s", s.last_step_expert_s},
            {"ttft", to_json(s.ttft)},
            {"itl", to_json(s.itl)},
            {"prefix_hit_rate", s.prefix_hit_rate},
            {"prefix_hit_tokens", s.prefix_hit_tokens}};
}

EngineSnapshot engine_snapshot_from_json(const Json& j) {
    const auto version = read<int>(j, "schema_version");
    if (version != kSnapshotSchemaVersion)
        throw Error("snapshot JSON has schema_version " + std::to_string(version) + "; this kvscope reads version " +
                    std::to_string(kSnapshotSchemaVersion));
    EngineSnapshot s;
    s.step = read<std::uint64_t>(j, "step");
    s.time_s = read<double>(j, "time_s");
    s.device = read_device(at(j, "device"));
    s.pool = read_pool(at(j, "pool"));
    for (const Json& seq : array_at(j, "seqs"))
        s.seqs.push_back(read_seq(seq));
    for (const Json& e : array_at(j, "ended_seqs"))
        s.ended_seqs.push_back(read_ended_seq(e));
    s.running = read<std::size_t>(j, "running");
    s.waiting = read<std::size_t>(j, "waiting");
    s.swapped = read<std::size_t>(j, "swapped");
    s.preemptions = read<std::uint64_t>(j, "preemptions");
    s.completed_requests = read<std::uint64_t>(j, "completed_requests");
    s.aborted_requests = read<std::uint64_t>(j, "aborted_requests");
    s.failed_requests = read<std::uint64_t>(j, "failed_requests");
    s.refused_requests = read<std::uint64_t>(j, "refused_requests");
    s.prompt_tokens = read<std::uint64_t>(j, "prompt_tokens");
    s.generated_tokens = read<std::uint64_t>(j, "generated_tokens");
    s.prompt_tokens_per_s = read<double>(j, "prompt_tokens_per_s");
    s.generation_tokens_per_s = read<double>(j, "generation_tokens_per_s");
    s.busy_s = read<double>(j, "busy_s");
    s.last_step_s = read<double>(j, "last_step_s");
    s.last_step_expert_s = read<double>(j, "last_step_expert_s");
    s.ttft = read_percentiles(at(j, "ttft"));
    s.itl = read_percentiles(at(j, "itl"));
    s.prefix_hit_rate = read<double>(j, "prefix_hit_rate");
    s.prefix_hit_tokens = read<std::uint64_t>(j, "prefix_hit_tokens");
    return s;
}

} // namespace kvscope

#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kv/kv_cache_manager.h"

namespace kvscope::ui {

// The two pools of the allocator playground.
enum class PoolSide : std::uint8_t { Paged, Contiguous };
inline constexpr std::array<PoolSide, 2> kPoolSides = {PoolSide::Paged, PoolSide::Contiguous};

struct PlaygroundConfig {
    std::uint32_t num_blocks = 32;
    std::uint32_t block_size = 4;
};

// What the last operation did to one pool.
struct OpOutcome {
    enum class Kind : std::uint8_t {
        Done,
        Refused, // the KV cache threw; message is its reason
        NotHeld, // the sequence is not in this pool (an earlier step was refused here)
    };
    Kind kind = Kind::Done;
    std::string message;

    bool ok() const { return kind == Kind::Done; }
};

// Both pools' figures after one operation, for charts.
struct PlaygroundStep {
    std::string operation;
    FragmentationStats paged;
    FragmentationStats contiguous;
};

// Scripted examples the playground can replay with one click.
enum class Scenario : std::uint8_t {
    Abc,              // 6 blocks: A takes 2, B takes 1, A is freed, C needs 4
    ParallelSampling, // one prompt forked into three samples that each generate tokens
};
// "abc", "parallel": the words --scenario takes. nullopt for anything else.
std::optional<Scenario> parse_scenario(std::string_view word);

// Playground sequence names: 0 → "A", 25 → "Z", 26 → "AA".
std::string sequence_name(SeqId seq);

// The allocator playground without widgets: one paged and one contiguous
// KvCacheManager of the same (small, real) layout, and every operation
// applied to both, recording per pool what happened or why it was refused.
//
// Every token gets a fresh id, so no two sequences share a prefix by
// accident: sharing only comes from fork.
class PlaygroundModel {
public:
    explicit PlaygroundModel(PlaygroundConfig config = {});

    void reset(PlaygroundConfig config);
    // A new sequence (named by its id) with `prompt_tokens` tokens that may
    // grow by `max_new_tokens`; contiguous allocation reserves both.
    SeqId add_sequence(std::uint32_t prompt_tokens, std::uint32_t max_new_tokens);
    void append_tokens(SeqId seq, std::uint32_t count);
    SeqId fork(SeqId parent);
    void free(SeqId seq);
    // Resets the pools and replays a scenario, one recorded step per operation.
    void run_scenario(Scenario scenario);

    const PlaygroundConfig& config() const { return config_; }
    const KvCacheManager& manager(PoolSide side) const { return *pool(side).manager; }
    std::shared_ptr<const PoolSnapshot> snapshot(PoolSide side) const { return manager(side).snapshot(); }
    const OpOutcome& outcome(PoolSide side) const { return pool(side).outcome; }
    const std::string& last_operation() const { return last_operation_; }
    // Sequences at least one pool holds, ascending.
    std::vector<SeqId> live_sequences() const;
    bool holds(SeqId seq) const;
    // Starts with the reset; one entry per operation since.
    const std::vector<PlaygroundStep>& history() const { return history_; }

private:
    struct Pool {
        std::unique_ptr<KvCacheManager> manager;
        OpOutcome outcome;
    };
    Pool& pool(PoolSide side) { return pools_[static_cast<std::size_t>(side)]; }
    const Pool& pool(PoolSide side) const { return pools_[static_cast<std::size_t>(side)]; }
    // Runs op(manager) on both pools, or records NotHeld where `seq` is
    // not held; a kvscope::Error from op becomes a Refused outcome.
    template <typename Op>
    void apply(const std::string& operation, std::optional<SeqId> seq, Op op);
    void record(std::string operation);
    void run_abc();
    void run_parallel_sampling();
    std::vector<TokenId> fresh_tokens(std::uint32_t count);

    PlaygroundConfig config_;
    std::array<Pool, 2> pools_;
    SeqId next_seq_ = 0;
    TokenId next_token_ = 1;
    std::string last_operation_;
    std::vector<PlaygroundStep> history_;
};

// "3 blocks: 4–6, 1": a block table with consecutive runs folded, so a
// contiguous reservation reads as one range and a paged table shows its
// scatter.
std::string describe_blocks(std::span<const BlockId> table);

} // namespace kvscope::ui

#include "ui/playground/playground_model.h"

#include <algorithm>
#include <cctype>

namespace kvscope::ui {
namespace {

// A tiny but real layout: the pool memory is allocated for real, so keep a
// token at 32 bytes (1 layer, 1 KV head, head_dim 8, f16, K and V).
KvLayout playground_layout(std::uint32_t block_size) {
    return KvLayout(kAllocationDemoGeometry, KvDtype::F16, block_size);
}

std::unique_ptr<KvCacheManager> make_manager(const PlaygroundConfig& config, AllocationMode mode) {
    KvCacheConfig c{.layout = playground_layout(config.block_size), .num_blocks = config.num_blocks, .mode = mode};
    return std::make_unique<KvCacheManager>(c);
}

std::string plural(std::size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// "A: 10 tokens in 3 blocks: 0–2"
OpOutcome holding(const KvCacheManager& m, SeqId seq, std::string extra = {}) {
    return {OpOutcome::Kind::Done, sequence_name(seq) + ": " + plural(m.num_tokens(seq), "token") + " in " +
                                       describe_blocks(m.block_table(seq, 0)) + extra};
}

// The engine names sequences by number ("sequence 2"); the playground shows
// letters, so its messages should too ("sequence C").
std::string with_sequence_names(const std::string& message) {
    static const std::string kWord = "sequence ";
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = message.find(kWord, from)) != std::string::npos;) {
        std::size_t end = at + kWord.size();
        while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end])))
            ++end;
        out.append(message, from, at + kWord.size() - from);
        if (end > at + kWord.size())
            out += sequence_name(std::stoull(message.substr(at + kWord.size(), end - at - kWord.size())));
        from = end;
    }
    return out + message.substr(from);
}

OpOutcome refused(const std::string& what, const std::string& reason) {
    return {OpOutcome::Kind::Refused, what + with_sequence_names(reason)};
}

OpOutcome not_held(SeqId seq) {
    return {OpOutcome::Kind::NotHeld, sequence_name(seq) + " is not in this pool (refused earlier)"};
}

} // namespace

std::string sequence_name(SeqId seq) {
    std::string name;
    for (SeqId n = seq + 1; n > 0; n = (n - 1) / 26)
        name.insert(name.begin(), static_cast<char>('A' + (n - 1) % 26));
    return name;
}

std::string describe_blocks(std::span<const BlockId> table) {
    std::string runs;
    for (std::size_t i = 0; i < table.size();) {
        std::size_t j = i;
        while (j + 1 < table.size() && table[j + 1] == table[j] + 1)
            ++j;
        runs += (runs.empty() ? "" : ", ") + std::to_string(table[i]);
        if (j > i)
            runs += "\u2013" + std::to_string(table[j]);
        i = j + 1;
    }
    return plural(table.size(), "block") + (runs.empty() ? "" : ": " + runs);
}

PlaygroundModel::PlaygroundModel(PlaygroundConfig config) { reset(config); }

void PlaygroundModel::reset(PlaygroundConfig config) {
    // Build both before replacing either: a bad config throws and leaves the
    // playground as it was.
    auto paged = make_manager(config, AllocationMode::Paged);
    auto contiguous = make_manager(config, AllocationMode::Contiguous);
    config_ = config;
    pool(PoolSide::Paged).manager = std::move(paged);
    pool(PoolSide::Contiguous).manager = std::move(contiguous);
    next_seq_ = 0;
    next_token_ = 1;
    history_.clear();
    const std::string what = "Empty pool: " + plural(config.num_blocks, "block") + " of " +
                             plural(config.block_size, "slot");
    for (PoolSide side : kPoolSides)
        pool(side).outcome = {OpOutcome::Kind::Done, what};
    record("Reset: " + plural(config.num_blocks, "block") + " \u00d7 " + plural(config.block_size, "token"));
}

SeqId PlaygroundModel::add_sequence(std::uint32_t prompt_tokens, std::uint32_t max_new_tokens) {
    const SeqId seq = next_seq_++;
    const std::vector<TokenId> prompt = fresh_tokens(prompt_tokens);
    apply("Add " + sequence_name(seq) + ": " + std::to_string(prompt_tokens) + " prompt + " +
              std::to_string(max_new_tokens) + " max new tokens",
          std::nullopt, [&](KvCacheManager& m) {
              const std::uint32_t cached = m.allocate(seq, prompt, max_new_tokens);
              m.cover(seq, m.num_tokens(seq)); // no model here: the prompt counts as computed at once
              return holding(m, seq, cached ? " (" + plural(cached, "token") + " from the prefix cache)" : "");
          });
    return seq;
}

void PlaygroundModel::append_tokens(SeqId seq, std::uint32_t count) {
    const std::vector<TokenId> tokens = fresh_tokens(count);
    apply("Append " + plural(count, "token") + " to " + sequence_name(seq), seq, [&](KvCacheManager& m) {
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            try {
                m.append(seq, tokens[i]);
            } catch (const KvError& e) {
                return refused("Appended " + std::to_string(i) + " of " + std::to_string(count) + ", then: ",
                               e.what());
            }
        }
        return holding(m, seq);
    });
}

SeqId PlaygroundModel::fork(SeqId parent) {
    const SeqId child = next_seq_++;
    apply("Fork " + sequence_name(parent) + " \u2192 " + sequence_name(child), parent, [&](KvCacheManager& m) {
        m.fork(parent, child);
        return holding(m, child);
    });
    return child;
}

void PlaygroundModel::free(SeqId seq) {
    apply("Free " + sequence_name(seq), seq, [&](KvCacheManager& m) {
        const std::size_t free_before = m.pool().num_free();
        const std::size_t cached_before = m.pool().num_cached_free();
        m.free(seq);
        const std::size_t cached_after = m.pool().num_cached_free();
        const std::size_t cached = cached_after > cached_before ? cached_after - cached_before : 0;
        return OpOutcome{OpOutcome::Kind::Done,
                         "Freed " + sequence_name(seq) + ": " + plural(m.pool().num_free() - free_before, "block") +
                             " back in the pool" +
                             (cached ? " (" + std::to_string(cached) + " kept as cached free)" : "")};
    });
}

std::optional<Scenario> parse_scenario(std::string_view word) {
    if (word == "abc")
        return Scenario::Abc;
    if (word == "parallel")
        return Scenario::ParallelSampling;
    return std::nullopt;
}

void PlaygroundModel::run_scenario(Scenario scenario) {
    switch (scenario) {
    case Scenario::Abc: run_abc(); break;
    case Scenario::ParallelSampling: run_parallel_sampling(); break;
    }
}

// Contiguous allocation finds 5 free blocks but no run of 4 and refuses C;
// paged allocation takes any 4.
void PlaygroundModel::run_abc() {
    reset({.num_blocks = 6, .block_size = 4});
    const SeqId a = add_sequence(7, 1); // 8 slots: 2 blocks either way
    add_sequence(3, 1);                 // B: 1 block
    free(a);                            // holes: 2 blocks, then 3 after B
    add_sequence(14, 2);                // C: 4 blocks, in one run if contiguous
}

// vLLM's parallel sampling: the samples share the prompt's blocks and copy
// only the partly filled last one on their first write; contiguous
// allocation copies the whole reservation for every sample.
void PlaygroundModel::run_parallel_sampling() {
    reset({.num_blocks = 24, .block_size = 4});
    const SeqId a = add_sequence(10, 8);
    const std::array<SeqId, 3> samples = {a, fork(a), fork(a)};
    for (SeqId seq : samples)
        append_tokens(seq, 6);
}

std::vector<SeqId> PlaygroundModel::live_sequences() const {
    std::vector<SeqId> live;
    for (SeqId seq = 0; seq < next_seq_; ++seq)
        if (holds(seq))
            live.push_back(seq);
    return live;
}

bool PlaygroundModel::holds(SeqId seq) const {
    return std::ranges::any_of(kPoolSides, [&](PoolSide side) { return manager(side).contains(seq); });
}

template <typename Op>
void PlaygroundModel::apply(const std::string& operation, std::optional<SeqId> seq, Op op) {
    for (PoolSide side : kPoolSides) {
        Pool& p = pool(side);
        if (seq && !p.manager->contains(*seq)) {
            p.outcome = not_held(*seq);
            continue;
        }
        try {
            p.outcome = op(*p.manager);
        } catch (const Error& e) {
            p.outcome = refused("Refused: ", e.what());
        }
    }
    record(operation);
}

void PlaygroundModel::record(std::string operation) {
    last_operation_ = operation;
    history_.push_back({std::move(operation), manager(PoolSide::Paged).fragmentation(),
                        manager(PoolSide::Contiguous).fragmentation()});
}

std::vector<TokenId> PlaygroundModel::fresh_tokens(std::uint32_t count) {
    std::vector<TokenId> tokens(count);
    for (TokenId& t : tokens)
        t = next_token_++;
    return tokens;
}

} // namespace kvscope::ui

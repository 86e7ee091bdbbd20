// Hand-made RemoteSamples of each kind of server, as net/attach's readers
// would make them, for the connected view's tests (no network).
#pragma once

#include <memory>

#include "engine/kv/kv_cache_manager.h"
#include "net/attach/remote_sample.h"

namespace kvscope::ui::test {

// llama.cpp: two slots of 512 tokens, one busy holding 100, one idle and
// empty; q8_0 KV of 1,024 bytes a token.
inline attach::RemoteSample llamaCppSample() {
    attach::RemoteSample s;
    s.kind = attach::ServerKind::LlamaCpp;
    s.url = "http://127.0.0.1:8080";
    s.model = "stories260K";
    s.link = attach::LinkState::Live;
    s.data_age_s = 0.4;
    s.total.kv_tokens_used = 100;
    s.total.kv_tokens_capacity = 1024;
    s.total.kv_usage = 100.0 / 1024;
    s.total.kv_dtype = "q8_0";
    s.total.kv_bytes_per_token = 1024;
    s.total.running = 1;
    s.total.waiting = 0;
    s.total.generation_tokens_per_s = 42.5;
    s.slot_samples = {{0, 512, 100, true, 90, 10}, {1, 512, 0, false, std::nullopt, std::nullopt}};
    return s;
}

// vLLM with two data-parallel ranks, fp8 KV; rank 0's KV events connected.
inline attach::RemoteSample vllmSample() {
    attach::RemoteSample s;
    s.kind = attach::ServerKind::Vllm;
    s.url = "http://10.0.0.1:8000";
    s.model = "meta-llama/Llama-3.1-8B";
    s.link = attach::LinkState::Live;
    s.data_age_s = 0.2;
    attach::ServerFigures rank;
    rank.kv_usage = 0.5;
    rank.kv_blocks_total = 1000;
    rank.block_size = 16;
    rank.kv_dtype = "fp8";
    rank.running = 3;
    rank.waiting = 1;
    rank.preemptions = 2;
    rank.prefix_hit_rate = 0.25;
    rank.ttft.p50_ms = 12.0;
    s.total = rank;
    s.total.kv_blocks_total = 2000;
    s.total.running = 6;
    s.total.waiting = 2;
    s.total.preemptions = 4;
    attach::PrefixCacheSample cache;
    cache.blocks = 9;
    cache.chains = 3;
    cache.longest_chain = 5;
    cache.stored = 12;
    cache.removed = 3;
    cache.batches = 7;
    cache.replayed = 2;
    cache.lost = 1;
    cache.age_s = 0.3;
    cache.chain_lengths = {5, 3, 1};
    // A hybrid model: the full-attention group and a 512-token window group.
    cache.groups = {{0, "full_attention", std::nullopt, 5, 1, 5}, {1, "sliding_window", 512, 4, 2, 3}};
    s.ranks = {{0, rank, cache, "tcp://10.0.0.1:5557"}, {1, rank, std::nullopt, std::nullopt}};
    return s;
}

// kvscope: its engine's snapshot, one running sequence of 6 tokens in 8
// blocks of 4.
inline attach::RemoteSample kvscopeSample() {
    KvCacheManager kv(KvCacheConfig{KvLayout({2, 2, 8}, KvDtype::F16, 4), 8, AllocationMode::Paged, true, 0, 0.0});
    kv.allocate(1, std::vector<TokenId>{5, 6, 7, 8, 9, 10}, 8);
    auto engine = std::make_shared<EngineSnapshot>();
    engine->step = 1200; // a server that has run a while: its own steps and seconds
    engine->time_s = 3600.0;
    engine->pool = kv.snapshot();
    engine->seqs = {{1, 77, 0, SeqStatus::Running, 6, 0}};
    engine->running = 1;
    attach::RemoteSample s;
    s.kind = attach::ServerKind::Kvscope;
    s.url = "http://127.0.0.1:8090";
    s.model = "stories260K";
    s.link = attach::LinkState::Live;
    s.data_age_s = 0.1;
    s.total.kv_blocks_total = 8;
    s.total.kv_blocks_used = 2;
    s.total.block_size = 4;
    s.engine = engine;
    return s;
}

} // namespace kvscope::ui::test

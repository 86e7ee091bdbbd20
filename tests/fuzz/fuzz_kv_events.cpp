// vLLM's KV event decoder (net/attach/kv_events.h) on arbitrary bytes, as a
// hostile publisher could send them: every input either decodes, and then
// applies to a small prefix cache map whose figures stay consistent and
// within its cap, or throws KvEventsError. Anything else (a crash, another
// exception, an ASan or UBSan report, an allocation far beyond the input)
// is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "net/attach/kv_events.h"
#include "net/attach/prefix_cache_map.h"
#include "fuzz_support.h"

namespace {

using kvscope::fuzz::require;

constexpr std::size_t kCap = 64; // small, so the fuzzer reaches the eviction path

void check(const kvscope::attach::PrefixCacheMap& map) {
    const kvscope::attach::PrefixCacheSample s = map.sample();
    require(s.blocks == map.size() && s.blocks <= kCap, "the map holds at most its cap");
    require(s.chains <= s.blocks, "every chain has a root block");
    require(s.chain_lengths.size() <= kvscope::attach::PrefixCacheMap::kMaxChainLengths, "at most 64 chain lengths");
    require(std::is_sorted(s.chain_lengths.begin(), s.chain_lengths.end(), std::greater<>()), "chain lengths longest first");
    require(s.longest_chain == (s.chain_lengths.empty() ? 0 : s.chain_lengths.front()), "the longest chain leads");
    require(s.longest_chain <= s.blocks, "no chain is longer than the blocks held");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view payload(reinterpret_cast<const char*>(data), size);
    try {
        const kvscope::attach::KvEventBatch batch = kvscope::attach::decode_kv_event_batch(payload);
        kvscope::attach::PrefixCacheMap map(kCap);
        map.apply(batch);
        check(map);
        map.apply(batch); // twice: stored again, removed again
        check(map);
    } catch (const kvscope::attach::KvEventsError& e) {
        require(std::string_view(e.what()).starts_with("vLLM KV event batch: "), "an error says it is about a KV event batch");
    }
    return 0;
}

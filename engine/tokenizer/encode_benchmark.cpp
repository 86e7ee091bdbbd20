#include "engine/tokenizer/encode_benchmark.h"

#include <chrono>

namespace kvscope {

double bench_encode_mb_per_s(const Tokenizer& tokenizer, std::string_view text) {
    using Clock = std::chrono::steady_clock;
    constexpr std::chrono::milliseconds kMinDuration{250};
    const Clock::time_point start = Clock::now();
    double bytes = 0;
    std::chrono::duration<double> elapsed{};
    do {
        tokenizer.encode(text);
        bytes += static_cast<double>(text.size());
        elapsed = Clock::now() - start;
    } while (elapsed < kMinDuration);
    return bytes / 1e6 / elapsed.count();
}

} // namespace kvscope

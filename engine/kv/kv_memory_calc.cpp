#include "engine/kv/kv_memory_calc.h"

namespace kvscope {

KvMemoryAnswer answer_kv_memory(const KvMemoryQuestion& q, KvDtype dtype) {
    const KvLayout layout(q.geometry, dtype, q.block_size);
    KvMemoryAnswer a;
    a.dtype = dtype;
    a.bytes_per_token = layout.bytes_per_token();
    a.bytes_per_block = layout.bytes_per_block();
    a.bytes_per_sequence = layout.bytes_for_tokens(q.tokens_per_sequence);
    a.tail_bytes = layout.tail_bytes();
    a.fixed_bytes = layout.fixed_bytes();
    a.total_bytes = q.sequences * a.bytes_per_sequence + a.fixed_bytes;
    if (q.device_bytes) {
        const double usable = static_cast<double>(*q.device_bytes) * q.memory_fraction -
                              static_cast<double>(q.weight_bytes) - static_cast<double>(a.fixed_bytes);
        a.kv_budget_bytes = usable > 0 ? static_cast<std::uint64_t>(usable) : 0;
        a.sequences_that_fit = a.bytes_per_sequence ? *a.kv_budget_bytes / a.bytes_per_sequence : 0;
    }
    return a;
}

std::vector<KvMemoryAnswer> answer_kv_memory_all_dtypes(const KvMemoryQuestion& q) {
    std::vector<KvMemoryAnswer> answers;
    for (KvDtype dtype : all_kv_dtypes())
        answers.push_back(answer_kv_memory(q, dtype));
    return answers;
}

} // namespace kvscope

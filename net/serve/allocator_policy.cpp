#include "net/serve/allocator_policy.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kvscope::serve {

void map_large_blocks_apart() {
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOwnMappingBytes));
#endif
}

void give_back_free_memory() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

} // namespace kvscope::serve

// Never compiled: on the allowlist, so test_platform_calls_catches must not
// name it.
#include <sys/mman.h>

void advise(void* p, unsigned long n) { madvise(p, n, MADV_HUGEPAGE); }

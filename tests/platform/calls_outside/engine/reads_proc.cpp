// Never compiled: read by test_platform_calls_catches, which must name
// both lines below (a Linux-only file and a glibc-only call in the engine).
#include <fstream>
#include <malloc.h>

long resident_kb() {
    std::ifstream in("/proc/self/status");
    malloc_trim(0);
    return 0;
}

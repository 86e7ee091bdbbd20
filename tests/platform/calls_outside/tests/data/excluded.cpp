// Never compiled: under tests/data, which the check skips; must not be named.
const char* kStatus = "/proc/self/status";

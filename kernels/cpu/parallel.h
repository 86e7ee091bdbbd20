// The kernels' threads. Each call is parallelized inside, on a small pool of
// persistent worker threads (rows of a matmul, heads of attention); the
// caller stays single-threaded and takes part in the work. How many threads
// a call may use is that call's argument, never process-wide state: two
// engines with different thread counts share the pool, each call running at
// its caller's count.
#pragma once

namespace kvscope::kernels::cpu {

// The cores this process may use (at least 1).
int available_cores();

// A thread-count setting made concrete: `requested` when it is positive,
// else one per available core (0 means "auto" in EngineConfig and --threads).
int resolve_threads(int requested);

} // namespace kvscope::kernels::cpu

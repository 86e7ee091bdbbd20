// The kernels' threads. Each call is parallelized inside, on a small pool of
// persistent worker threads (rows of a matmul, heads of attention); the
// caller stays single-threaded and takes part in the work.
#pragma once

namespace kvscope::kernels::cpu {

// Threads each kernel call may use. n <= 0 means one per available core
// (the default). Takes effect on the next call.
void set_num_threads(int n);
int num_threads();

} // namespace kvscope::kernels::cpu

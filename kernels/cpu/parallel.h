// The kernels' threads. They parallelize inside each call with OpenMP
// (rows of a matmul, heads of attention); the caller stays single-threaded.
#pragma once

namespace kvscope::kernels::cpu {

// Threads each kernel call may use. n <= 0 means one per available core
// (the default). Takes effect on the next call.
void set_num_threads(int n);
int num_threads();

} // namespace kvscope::kernels::cpu

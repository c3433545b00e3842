// A tiny fork-join helper for the heavy reference kernels: splits [0, count) into contiguous chunks,
// one per thread. Each index is handled by exactly one call, so kernels whose per-index work is
// deterministic produce identical results for any thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace weft::ref {

// The number of worker threads to use for `requested` (InterpreterOptions::threads; 0 = hardware).
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Calls fn(begin, end) over disjoint ranges covering [0, count). With one thread (or too little work,
// fewer than `min_per_thread` indices per thread) it runs inline. The first exception thrown by any
// chunk is rethrown here after all threads have joined.
template <class F>
void parallel_for(int requested_threads, int64_t count, F&& fn, int64_t min_per_thread = 1) {
  if (count <= 0) return;
  int64_t threads = resolve_threads(requested_threads);
  threads = std::min<int64_t>(threads, std::max<int64_t>(1, count / std::max<int64_t>(1, min_per_thread)));
  if (threads <= 1) {
    fn(int64_t{0}, count);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto run_chunk = [&](int64_t t) {
    int64_t begin = count * t / threads, end = count * (t + 1) / threads;
    try {
      if (begin < end) fn(begin, end);
    } catch (...) {
      errors[static_cast<size_t>(t)] = std::current_exception();
    }
  };
#ifdef _OPENMP
  // Built with OpenMP (the oneDNN backend's threading): the chunks run on the OpenMP team, whose
  // threads oneDNN's primitives keep spinning for a while after each region. Own std::threads
  // would compete with those spinning threads for the cores (swin_t at 2 threads: its 15 broadcast
  // ADDs took 6.9 ms between oneDNN matmuls, 2.2 ms alone) and pay a thread start per call.
#pragma omp parallel for schedule(static) num_threads(static_cast<int>(threads))
  for (int64_t t = 0; t < threads; ++t) run_chunk(t);
#else
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(run_chunk, t);
  run_chunk(0);
  for (std::thread& th : pool) th.join();
#endif
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace weft::ref

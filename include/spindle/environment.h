// spindle/environment.h — global thread pools and the process-level API.
//
// An Environment owns the global intra-op and inter-op pools. Sessions with
// use_per_session_threads = false share them and create none of their own.
// Pools are created lazily, on first use, from ThreadingOptions resolved with
// this precedence: explicit option > SPINDLE_INTRA_OP_NUM_THREADS /
// SPINDLE_INTER_OP_NUM_THREADS > MKL_NUM_THREADS > OMP_NUM_THREADS (the last
// two for intra-op only) > detection (physical cores this process may use).
//
// The PyTorch-style free functions act on Environment::default_env().
// Thread-safety: every member may be called from any thread.
//
// Lifetimes. Pools are shared: the Environment holds its current pools and
// every session created on them holds them too (shared_ptr), as does every
// parallel_for call while it runs. set_intra_op_num_threads swaps in a new
// pool for what starts afterwards; the old one is joined when its last user
// lets go. Destroying an Environment likewise leaves the pools to the
// sessions still using them. Nothing ever runs on a freed pool.
//
// set_num_threads (PyTorch's meaning: the process's intra-op thread count)
// governs what is created after the call: the global intra-op pool, and every
// session created afterwards on this Environment with intra_op_num_threads = 0
// (its own pool then has that many threads instead of one per physical core).
// Sessions created before the call keep the pools they have.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "spindle/status.h"
#include "spindle/thread_pool.h"
#include "spindle/threading_options.h"

namespace spindle {

class Environment {
 public:
  // Creates an environment whose global pools use these options (validated
  // now; the pools themselves start on first use).
  static Result<std::shared_ptr<Environment>> create(ThreadingOptions intra_op = {},
                                                     ThreadingOptions inter_op = {});
  // The process-wide environment used by the free functions below.
  static Environment& default_env();

  ~Environment();

  // Global pools; created on first call. The caller shares ownership: the
  // pool stays valid while the pointer is held, even across
  // set_intra_op_num_threads or the Environment's destruction.
  std::shared_ptr<ThreadPool> intra_op_pool();
  std::shared_ptr<TaskPool> inter_op_pool();

  // Sets the intra-op thread count (n >= 1, counting the caller): a started
  // global intra-op pool is replaced by one with n threads (its current users
  // finish on the old one), and sessions created afterwards with
  // intra_op_num_threads = 0 get n threads. On error nothing changes.
  Status set_intra_op_num_threads(int n);
  // The count given to set_intra_op_num_threads, or 0 when it was never
  // called (sessions then size their own pools from their options).
  int intra_op_num_threads_set() const;
  // Sets the inter-op pool size; only before the inter-op pool is first used.
  Status set_inter_op_num_threads(int n);
  int intra_op_num_threads();
  int inter_op_num_threads();

  const ThreadingOptions& intra_op_options() const;
  const ThreadingOptions& inter_op_options() const;

  // Text report of this environment's pools (see spindle::parallel_info).
  std::string parallel_info();

  struct Impl;

 private:
  explicit Environment(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// PyTorch-style process API on the default environment. These throw
// spindle::Error on bad values.
void set_num_threads(int n);
int get_num_threads();
void set_num_interop_threads(int n);  // before first inter-op use only
int get_num_interop_threads();

void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn);

template <class F>
auto fork(F&& fn) {
  return Environment::default_env().inter_op_pool()->fork(std::forward<F>(fn));
}

// Text report: backend, topology, pools and sizes, affinity, spin settings,
// environment variables read, knobs the backend ignores, and the
// set_num_threads rule with the count in force.
std::string parallel_info();

// Name of the backend compiled in: "native", "openmp" or "tbb".
const char* parallel_backend_name();

// The environment variables that set a default thread count, in precedence
// order (PyTorch's): intra-op SPINDLE_INTRA_OP_NUM_THREADS, MKL_NUM_THREADS,
// OMP_NUM_THREADS; inter-op SPINDLE_INTER_OP_NUM_THREADS. Explicit options
// beat all of them; they beat cpu_topology().default_num_threads.
std::vector<std::string> thread_count_variables(bool intra_op);

}  // namespace spindle

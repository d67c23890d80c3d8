// intra_pool_native.cpp — spindle's own intra-op pool (every knob honored).
//
// Overview. The pool owns dop - 1 workers and a fixed table of Jobs. A Job is
// never freed while the pool lives, so a worker may look at any Job at any
// time; who may run what is decided by one word per Job, `state`:
//   busy (1 bit) | gen (31) | n = blocks (16) | next = blocks claimed (16)
// A caller of parallel_for:
//   1. acquires a free Job (CAS busy 0 -> 1, gen + 1, no blocks), writes the
//      loop into it and publishes n blocks with block 0 already its own
//      (store, next = 1);
//   2. offers the Job to up to min(n, threads) - 1 workers (`threads` comes
//      from the loop's cost, thread_pool.cpp): CAS of an idle worker's slot
//      kIdle -> &job (a slot still holding &job is already offered), and
//      unparks the ones that sleep;
//   3. runs block 0, then claims and runs blocks like everyone (CAS next ->
//      next + 1). A claim entitles its thread to one block: the caller's
//      claims take blocks 1, 2, ... (the Job's `front`), workers' the last
//      ones first (`back`); as claims never exceed n, the ends never cross;
//   4. waits only for the blocks workers claimed: `done` counts them. A worker
//      that arrives late finds no block and leaves without the caller ever
//      waiting for it, which is what keeps back-to-back loops cheap;
//   5. releases the Job (busy 0).
// A worker whose slot holds a Job claims blocks while there are any, adds
// its count to `done`, resets its slot to kIdle and looks once more (a new
// loop on the same Job may have been published meanwhile).
// Claims compare the whole word, generation included, so a worker holding a
// stale view of an older loop cannot claim a block of a newer one; it reads
// the loop's fields only after a successful claim, and the caller does not
// rewrite them before every claimed block is done, so they are the loop's.
// There is no shared queue and no mutex on this path; concurrent callers use
// different Jobs and claim different idle workers (or run alone when none is
// idle). Pairs with spin.h (the spin window) and parker.h (sleeping).
//
// The key invariant: any thread may claim any block of any Job, and the claim
// (the CAS on `state`) is the only thing that decides whether a thread runs
// a block (which one then follows from front or back). An
// offer (a worker's slot holding &job) decides nothing: it only wakes a
// worker so that it looks. So an offer that arrives late, twice, or for a
// loop already over costs a wasted look and never a lost or doubled block.
// That is why the caller's take-back (step 4) may read is_parked() relaxed:
// a stale "awake" leaves an offer that the worker finds stale and drops; a
// stale "parked" takes back an offer from a worker that finds its slot idle
// and goes back to waiting. Either way no block depends on it.
//
// Invariants checked in debug and sanitizer builds (SPINDLE_POOL_CHECK):
// a claimed block index is below n and belongs to the claimed generation;
// workers never report more blocks than the loop has; a Job is released
// only with every block claimed and every worker-claimed block done.
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <array>
#include <chrono>
#include <latch>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "threading/intra_pool.h"
#include "threading/parker.h"
#include "threading/spin.h"
#include "threading/thread_hooks.h"
#include "threading/topology.h"

namespace spindle::detail {

namespace {

#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPINDLE_POOL_CHECK(cond)                                                                 \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      std::fprintf(stderr, "spindle intra-op pool invariant violated: %s (%s:%d)\n", #cond, __FILE__, \
                   __LINE__);                                                                    \
      std::abort();                                                                              \
    }                                                                                            \
  } while (0)
#else
#define SPINDLE_POOL_CHECK(cond) \
  do {                           \
  } while (0)
#endif

constexpr uintptr_t kIdle = 0;
// The caller waiting for blocks that workers claimed spins this many pause
// rounds: the join of short blocks is on the path bench/threading's
// pool_bench measures as dispatch_hot (dispatch + join of a 2-block loop).
// Then it yields kJoinYieldRounds times (a worker preempted mid-block on a
// loaded machine), then parks until a worker finishing a block wakes it, so
// a long wait burns no CPU. kJoinYieldRounds is a bound, not a measured
// optimum: it only decides how soon a long wait stops costing CPU.
constexpr int kJoinSpinRounds = 4096;
constexpr int kJoinYieldRounds = 64;
// How long idle workers go on spinning (within their window) after the last
// run ends (begin_run / end_run below): the default window's length, so with
// default options a run's end changes nothing and a long window costs an
// idle process no more than this after its last run.
constexpr int64_t kRunEndSpinNs = 100000;
// A spinning worker checks every this many polls whether it shares the
// processor of the caller that last offered a loop (step_off_waker_cpu): a
// sched_getcpu each time, a few microseconds apart.
constexpr int kStepOffPolls = 64;
// Jobs per pool: concurrent callers beyond this run their loops alone (each
// caller holds one Job for one loop). No benchmark chose it: it is a bound
// whose only cost when exceeded is that the extra callers get no help
// (correct, IntraPool.MoreConcurrentCallersThanJobs); the table costs
// kJobs x 128 bytes per pool.
constexpr size_t kJobs = 64;

// The state word.
constexpr uint64_t kBusyBit = uint64_t{1} << 63;
constexpr uint64_t pack(uint64_t gen, uint64_t n, uint64_t next) {
  return kBusyBit | ((gen & 0x7fffffff) << 32) | (n << 16) | next;
}
constexpr bool is_busy(uint64_t s) { return (s & kBusyBit) != 0; }
constexpr uint64_t gen_of(uint64_t s) { return (s >> 32) & 0x7fffffff; }
constexpr int64_t blocks_of(uint64_t s) { return static_cast<int64_t>((s >> 16) & 0xffff); }
constexpr int64_t next_of(uint64_t s) { return static_cast<int64_t>(s & 0xffff); }

// The layout: each field reads back what pack wrote, the fields do not
// overlap, and claiming (s + 1) advances `next` alone while next < n.
static_assert(pack(0x7fffffff, 0xffff, 0xffff) == ~uint64_t{0}, "busy|gen|n|next fill 64 bits");
static_assert(gen_of(pack(0x7fffffff, 0, 0)) == 0x7fffffff && blocks_of(pack(0x7fffffff, 0, 0)) == 0 &&
                  next_of(pack(0x7fffffff, 0, 0)) == 0,
              "gen stays in bits 32..62");
static_assert(blocks_of(pack(0, 0xffff, 0)) == 0xffff && next_of(pack(0, 0xffff, 0)) == 0 && gen_of(pack(0, 0xffff, 0)) == 0,
              "n stays in bits 16..31");
static_assert(next_of(pack(5, 0xffff, 0xfffe) + 1) == 0xffff && blocks_of(pack(5, 0xffff, 0xfffe) + 1) == 0xffff &&
                  gen_of(pack(5, 0xffff, 0xfffe) + 1) == 5,
              "a claim (s + 1) with next < n touches next only");
static_assert(is_busy(pack(0, 0, 0)) && !is_busy(pack(0, 0, 0) & ~kBusyBit), "busy is bit 63");
static_assert(gen_of(pack(0x7fffffff + uint64_t{1}, 0, 0)) == 0, "the generation wraps within its 31 bits");
static_assert(kMaxBlocks <= 0xffff, "every partition's block count fits in n (partition_range caps it)");

// The claim word on its own line (callers and workers contend on it only for
// blocks); the loop's fields and `done` on the next.
struct alignas(64) Job {
  std::atomic<uint64_t> state{0};
  alignas(64) std::atomic<int64_t> done{0};  // blocks run (or skipped) by workers
  int64_t begin = 0;
  int64_t end = 0;
  int64_t block_size = 0;
  // Which block a claim runs: the caller's claims take blocks from the
  // front (block 0 first, its own before publishing), the workers' from the
  // back. A claim on `state` (next < n) entitles its thread to one block, so
  // the two ends never meet past n. The caller thus runs the first blocks
  // of every loop and a worker the last: consecutive loops over the same
  // rows or positions find what they read in the cache of the core that
  // wrote it (two cores of a guest ~230 ns apart: ResNet-50 at intra 2 did
  // 48% more block work than at intra 1 with blocks taken in claim order).
  std::atomic<int64_t> front{0};
  std::atomic<int64_t> back{0};
  const RangeFn* fn = nullptr;
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::exception_ptr error;
  // The caller parks here after its bounded spin and yield (step 4); a worker
  // that adds to `done` wakes it.
  Parker joiner;

  bool has_blocks() const {
    const uint64_t s = state.load(std::memory_order_seq_cst);
    return is_busy(s) && next_of(s) < blocks_of(s);
  }

  // Claims and runs blocks while there are any. Returns the number of blocks
  // to credit to this thread: the ones it ran plus, after an exception, the
  // ones it skipped. All claims of one call are of the same loop: its owner
  // cannot finish the loop before this thread reports them.
  int64_t help(bool caller) {
    int64_t count = 0;
    uint64_t s = state.load(std::memory_order_acquire);
    while (is_busy(s) && next_of(s) < blocks_of(s)) {
      if (!state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      SPINDLE_POOL_CHECK(next_of(s) < blocks_of(s) && blocks_of(s) <= 0xffff);
      const int64_t block = caller ? front.fetch_add(1, std::memory_order_relaxed)
                                   : blocks_of(s) - 1 - back.fetch_add(1, std::memory_order_relaxed);
      SPINDLE_POOL_CHECK(block >= 0 && block < blocks_of(s));
      count += run_block(s, block);
      s = state.load(std::memory_order_acquire);
    }
    return count;
  }

  // Runs `block` of the loop whose state word was s when it was claimed;
  // returns the blocks to credit (1, plus the skipped ones when fn throws).
  int64_t run_block(uint64_t s, int64_t block) {
    const int64_t lo = begin + block * block_size;
    const int64_t hi = std::min(end, lo + block_size);
    try {
      (*fn)(lo, hi);
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
      failed.store(true, std::memory_order_relaxed);
      return 1 + skip_rest(s);
    }
    return 1;
  }

 private:
  // Marks the loop's unclaimed blocks as claimed; returns how many.
  int64_t skip_rest(uint64_t seen) {
    uint64_t s = state.load(std::memory_order_relaxed);
    while (is_busy(s) && gen_of(s) == gen_of(seen) && next_of(s) < blocks_of(s)) {
      const uint64_t closed = (s & ~uint64_t{0xffff}) | static_cast<uint64_t>(blocks_of(s));
      if (state.compare_exchange_weak(s, closed, std::memory_order_acq_rel, std::memory_order_relaxed))
        return blocks_of(s) - next_of(s);
    }
    return 0;
  }
};

struct alignas(64) Worker {
  std::atomic<uintptr_t> slot{kIdle};
  Parker parker;
  // Woken to spin, not for a loop (missed_loop_start): its park ends.
  std::atomic<bool> nudged{false};
  int tid = 0;
  int stuck_on = -1;  // a processor this worker's affinity would not let it leave (its own thread only)
  PoolThread thread;
};

class NativeIntraPool final : public IntraPoolImpl {
 public:
  explicit NativeIntraPool(ResolvedPool r)
      : IntraPoolImpl(std::move(r)),
        spin_(make_spin_policy(resolved().options)),
        in_run_spin_(make_in_run_spin_policy(resolved().options)),
        workers_(static_cast<size_t>(resolved().num_workers())) {}

  Status start() {
    std::latch started(static_cast<std::ptrdiff_t>(workers_.size()));
    const auto& placement = resolved().placement;
    for (size_t i = 0; i < workers_.size(); ++i) {
      const CpuSet* pin = placement.empty() ? nullptr : &placement[i];
      workers_[i].thread = start_pool_thread(resolved().options, static_cast<int>(i), pin, [this, i, &started] {
        workers_[i].tid = current_tid();
        started.count_down();
        worker_loop(workers_[i]);
      });
      if (!workers_[i].thread.started()) {
        for (size_t j = i; j < workers_.size(); ++j) started.count_down();
        stop_all();
        return runtime_error(fmt::format("{}: create_thread returned no thread for worker {}",
                                         resolved().options.name, i));
      }
    }
    started.wait();
    return Status::ok();
  }

  ~NativeIntraPool() override { stop_all(); }

  void run(int64_t begin, int64_t end, const Partition& part, int threads, RangeFn fn) override {
    SPINDLE_POOL_CHECK(part.num_blocks <= kMaxBlocks);
    Job* job = acquire_job();
    if (!job) {  // more concurrent callers than Jobs: run the loop alone
      InsidePoolScope scope(this);
      for (int64_t b = 0; b < part.num_blocks; ++b) {
        const int64_t lo = begin + b * part.block_size;
        fn(lo, std::min(end, lo + part.block_size));
      }
      return;
    }
    note_loop_start();
    // 1. Write the loop, then publish its blocks.
    job->begin = begin;
    job->end = end;
    job->block_size = part.block_size;
    job->fn = &fn;
    job->error = nullptr;
    job->failed.store(false, std::memory_order_relaxed);
    job->done.store(0, std::memory_order_relaxed);
    job->front.store(1, std::memory_order_relaxed);  // block 0: the caller's
    job->back.store(0, std::memory_order_relaxed);
    // Block 0 is the caller's before anyone can claim: a worker that arrives
    // while the caller runs it finds the rest, one that arrives after an
    // empty or tiny loop finds nothing, and the caller never waits for it.
    const uint64_t gen = gen_of(job->state.load(std::memory_order_relaxed));
    const uint64_t first = pack(gen, static_cast<uint64_t>(part.num_blocks), 0);
    job->state.store(first + 1, std::memory_order_seq_cst);

    // 2. Offer it to idle workers.
    waker_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
    const auto job_word = reinterpret_cast<uintptr_t>(job);
    int64_t wanted = std::min<int64_t>({part.num_blocks - 1, static_cast<int64_t>(workers_.size()), threads - 1});
    bool woke_any = false;
    for (size_t i = 0; i < workers_.size() && wanted > 0; ++i) {
      Worker& w = workers_[i];
      uintptr_t seen = w.slot.load(std::memory_order_seq_cst);
      if (seen == job_word) {  // still on this Job from the last loop: it looks again before leaving
        --wanted;
      } else if (seen == kIdle && w.slot.compare_exchange_strong(seen, job_word, std::memory_order_seq_cst)) {
        woke_any |= w.parker.unpark();
        --wanted;
      }
    }

    // 3. Participate.
    int64_t mine;
    {
      InsidePoolScope scope(this);
      mine = job->run_block(first, 0);
      mine += job->help(true);
    }

    // 4. Wait for the blocks workers claimed (none when the caller ran them all).
    const int64_t theirs = part.num_blocks - mine;
    SPINDLE_POOL_CHECK(theirs >= 0 && next_of(job->state.load(std::memory_order_relaxed)) == part.num_blocks);
    wait_for_workers(*job, theirs);
    const bool failed = job->failed.load(std::memory_order_relaxed);
    std::exception_ptr error = failed ? job->error : nullptr;

    // Take the offer back from workers that have not woken up yet: when they
    // do, they find nothing and sleep on, instead of starting a spin window
    // for a loop that is over.
    if (woke_any) {
      for (Worker& w : workers_) {
        uintptr_t expected = job_word;
        if (w.parker.is_parked() && w.slot.load(std::memory_order_relaxed) == job_word)
          w.slot.compare_exchange_strong(expected, kIdle, std::memory_order_seq_cst);
      }
    }

    // 5. Release the Job (no blocks left to claim).
    SPINDLE_POOL_CHECK(job->done.load(std::memory_order_relaxed) == theirs);
    job->state.store(pack(gen, 0, 0) & ~kBusyBit, std::memory_order_release);
    last_end_ns_.store(steady_ns(), std::memory_order_relaxed);
    if (failed) std::rethrow_exception(error);
  }

  // Loops a spinning worker would have shared are coming no further apart
  // than the spin window, but the workers are parked (asleep since a gap,
  // or woken too late for any loop since): wake them to spin their window
  // for the next ones. Each such loop counts in the gap measure as a
  // dispatched one does; while they spin, the next ones are dispatched
  // (threads_for_cost with spinning workers) and keep them awake.
  void missed_loop_start() override {
    note_loop_start();
    const SpinPolicy& spin = current_spin();
    const int64_t avg = gap_ns_.load(std::memory_order_relaxed);
    if (!spin.enabled() || avg < 0 || avg > spin.window.count()) return;
    bool any = false;
    for (Worker& w : workers_) {
      if (!w.parker.is_parked() || w.slot.load(std::memory_order_relaxed) != kIdle) continue;
      if (!any) waker_cpu_.store(sched_getcpu(), std::memory_order_relaxed);
      any = true;
      w.nudged.store(true, std::memory_order_seq_cst);  // the condition write of Parker's protocol
      w.parker.unpark();
    }
  }
  void missed_loop_end() override { last_end_ns_.store(steady_ns(), std::memory_order_relaxed); }

  int spinning_workers() const override {
    int n = 0;
    for (const Worker& w : workers_)
      n += w.slot.load(std::memory_order_relaxed) == kIdle && !w.parker.is_parked() ? 1 : 0;
    return n;
  }

  std::vector<int> worker_tids() const override {
    std::vector<int> tids;
    for (const Worker& w : workers_) tids.push_back(w.tid);
    return tids;
  }

  bool is_worker_thread() const override { return t_worker_of == this; }

  // Once a pool has seen runs (ThreadPool::RunScope, as sessions use), its
  // workers spin only while one is active or for kRunEndSpinNs after the last
  // one ended, however long the window: an idle process burns at most that
  // after its last run, and a run that follows at once (back-to-back runs,
  // an await between them in Node.js) still finds its workers awake. Parked
  // at every run's end, the worker of a 2-vCPU guest woke too late for the
  // run's first loops, often for a whole series of runs: a bidirectional
  // LSTM at intra 2 ran at 0.58 ms or at its one-thread 1.05-1.5 ms by turns
  // (docs/benchmarks.md). A pool used without runs spins after every loop
  // for the window.
  void begin_run() override {
    runs_used_.store(true, std::memory_order_relaxed);
    last_end_ns_.store(0, std::memory_order_relaxed);  // the gap since the last run is not a loop gap
    active_runs_.fetch_add(1, std::memory_order_relaxed);
  }
  void end_run() override {
    run_end_ns_.store(steady_ns(), std::memory_order_relaxed);
    active_runs_.fetch_sub(1, std::memory_order_release);
  }

 private:
  static thread_local const NativeIntraPool* t_worker_of;

  void worker_loop(Worker& w) {
    t_worker_of = this;
    InsidePoolScope scope(this);
    for (;;) {
      uintptr_t word = wait_for_job(w);
      if (word == kIdle) return;  // stopping
      for (;;) {
        Job* job = reinterpret_cast<Job*>(word);
        if (const int64_t ran = job->help(false); ran > 0) {
          // seq_cst: the condition write of Parker's protocol (parker.h).
          [[maybe_unused]] const int64_t before = job->done.fetch_add(ran, std::memory_order_seq_cst);
          SPINDLE_POOL_CHECK(before + ran < 0x10000);
          job->joiner.unpark();  // a load of its flag unless the caller parked
        }
        // Leave the Job. The slot may have been taken back by its caller
        // meanwhile, and then offered by another: serve that one.
        uintptr_t expected = word;
        if (!w.slot.compare_exchange_strong(expected, kIdle, std::memory_order_seq_cst)) {
          if (expected == kIdle) break;
          word = expected;
          continue;
        }
        // A loop published on this Job after the look above, whose caller saw
        // the slot still holding it, counts on this worker: take it back.
        if (!job->has_blocks()) break;
        uintptr_t idle = kIdle;
        if (!w.slot.compare_exchange_strong(idle, word, std::memory_order_seq_cst)) word = idle;  // offered elsewhere
      }
    }
  }

  // Step 4: spin, then yield, then park (bounded: a long block or a
  // preempted worker costs the caller no CPU). The worker that adds to
  // `done` unparks it; Parker's protocol makes the wake-up impossible to
  // miss (`done` is the condition).
  static void wait_for_workers(Job& job, int64_t theirs) {
    auto finished = [&] { return job.done.load(std::memory_order_acquire) == theirs; };
    for (int round = 0; !finished(); ++round) {
      if (round < kJoinSpinRounds) {
        cpu_pause();
      } else if (round < kJoinSpinRounds + kJoinYieldRounds) {
        std::this_thread::yield();
      } else {
        job.joiner.park(finished);
      }
    }
    SPINDLE_POOL_CHECK(job.done.load(std::memory_order_relaxed) == theirs);
  }

  // A free Job, or nullptr when all are in use. Each caller thread starts
  // looking at its own place in the table.
  Job* acquire_job() {
    static std::atomic<uint32_t> next_thread{0};
    thread_local const uint32_t start = next_thread.fetch_add(1, std::memory_order_relaxed);
    for (size_t k = 0; k < kJobs; ++k) {
      Job& j = jobs_[(start + k) % kJobs];
      uint64_t s = j.state.load(std::memory_order_relaxed);
      if (!is_busy(s) && j.state.compare_exchange_strong(s, pack(gen_of(s) + 1, 0, 0), std::memory_order_acquire,
                                                          std::memory_order_relaxed))
        return &j;
    }
    return nullptr;
  }

  // No run active, and the last one ended more than kRunEndSpinNs ago.
  bool runs_over() const {
    if (active_runs_.load(std::memory_order_acquire) != 0) return false;
    return steady_ns() - run_end_ns_.load(std::memory_order_relaxed) > kRunEndSpinNs;
  }

  static int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // The spin policy's measurement: the gap between the end of one parallel
  // loop and the start of the next, averaged (halving weights). Loops that
  // run inline (too small, threads_for_cost) are not counted: they never
  // wake a worker, so the gap is the time a worker would spin for nothing.
  void note_loop_start() {
    const int64_t last = last_end_ns_.load(std::memory_order_relaxed);
    if (last == 0) return;
    const int64_t gap = steady_ns() - last;
    const int64_t avg = gap_ns_.load(std::memory_order_relaxed);
    gap_ns_.store(avg < 0 ? gap : (avg + gap) / 2, std::memory_order_relaxed);
  }

  // Whether the next loop is likely to come within the spin window: when
  // the measured gap is longer, spinning would only burn CPU, so the worker
  // parks at once (a wake-up then costs a futex call, which the gap dwarfs).
  bool next_loop_soon(const SpinPolicy& spin) const {
    const int64_t avg = gap_ns_.load(std::memory_order_relaxed);
    return avg < 0 || avg <= spin.window.count();
  }

  // The window for a worker going idle now: the in-run one while a run is
  // active (make_in_run_spin_policy), else the pool's.
  const SpinPolicy& current_spin() const {
    return active_runs_.load(std::memory_order_relaxed) > 0 ? in_run_spin_ : spin_;
  }

  // Spins for the window (cut short when the last run ends, skipped when
  // loops come further apart than the window), then parks. Returns the job
  // word, or kIdle when the pool is stopping.
  uintptr_t wait_for_job(Worker& w) {
    auto assigned = [&] {
      return w.slot.load(std::memory_order_acquire) != kIdle;
    };
    int polls = 0;
    for (;;) {
      const SpinPolicy& spin = current_spin();
      bool got = next_loop_soon(spin) ? spin_until(spin, assigned, [&] {
        if (++polls % kStepOffPolls == 0) step_off_waker_cpu(w);
        return stop_.load(std::memory_order_relaxed) || (runs_used_.load(std::memory_order_relaxed) && runs_over());
      }) : assigned();
      if (!got) {
        w.parker.park([&] {
          return assigned() || stop_.load(std::memory_order_seq_cst) || w.nudged.load(std::memory_order_acquire);
        });
        w.nudged.store(false, std::memory_order_relaxed);
        step_off_waker_cpu(w);
      }
      const uintptr_t v = w.slot.load(std::memory_order_acquire);
      if (v != kIdle) return v;
      if (stop_.load(std::memory_order_acquire)) return kIdle;
    }
  }

  // A worker woken onto the processor of the thread that offered the loop
  // queues behind it there, both cache-hot, and the load balancer leaves
  // them together for milliseconds while another processor idles: on the
  // 2-vCPU test guest a worker often sat 3-4 ms per turn behind its caller
  // (perf sched timehist), for whole series of runs. It steps off that
  // processor as soon as it runs after a wake-up, and while it spins
  // (topology.h's step_off_cpu). A processor its affinity does not let it
  // leave is not tried again.
  void step_off_waker_cpu(Worker& w) {
    const int waker = waker_cpu_.load(std::memory_order_relaxed);
    if (waker < 0 || waker == w.stuck_on || sched_getcpu() != waker) return;
    if (!step_off_cpu(waker)) w.stuck_on = waker;
  }

  void stop_all() {
    stop_.store(true, std::memory_order_seq_cst);
    for (Worker& w : workers_) w.parker.unpark();
    for (Worker& w : workers_) w.thread.join();
  }

  SpinPolicy spin_;
  SpinPolicy in_run_spin_;
  std::vector<Worker> workers_;
  std::array<Job, kJobs> jobs_;
  std::atomic<bool> stop_{false};
  std::atomic<int> active_runs_{0};
  std::atomic<bool> runs_used_{false};
  std::atomic<int64_t> last_end_ns_{0};  // end of the last parallel loop (0: none in this run)
  std::atomic<int64_t> run_end_ns_{0};   // end of the last run (RunScope)
  std::atomic<int> waker_cpu_{-1};       // processor of the last caller that offered a loop
  std::atomic<int64_t> gap_ns_{-1};      // averaged gap between parallel loops (-1: none measured)
};

thread_local const NativeIntraPool* NativeIntraPool::t_worker_of = nullptr;

}  // namespace

std::vector<std::string> backend_ignored_knobs() { return {}; }

Result<std::unique_ptr<IntraPoolImpl>> IntraPoolImpl::create(ResolvedPool resolved) {
  auto pool = std::make_unique<NativeIntraPool>(std::move(resolved));
  SPINDLE_RETURN_IF_ERROR(pool->start());
  return std::unique_ptr<IntraPoolImpl>(std::move(pool));
}

}  // namespace spindle::detail

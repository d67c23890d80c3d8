// topology.h — which processors this process may use, and how many threads
// that makes by default.
//
// Physical cores come from hwloc. They are intersected with the process's
// affinity mask (sched_getaffinity) and the count is capped by the cgroup CPU
// quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, rounded up).
// Detection runs once per process (topology()); the parsing helpers are
// separate so tests can feed them synthetic cgroup files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spindle/status.h"
#include "spindle/threading_options.h"

namespace spindle::detail {

struct Core {
  int index = 0;       // logical index among all physical cores
  CpuSet pus;          // allowed logical processors of this core
  int numa_node = 0;   // node of the core (0 without NUMA information)
  int efficiency = 0;  // hwloc cpukind rank, higher = faster (0 without cpukinds)
};

struct CgroupQuota {
  double cpus = 0;        // quota / period
  std::string source;     // the file it came from
};

struct Topology {
  std::vector<Core> cores;        // physical cores with at least one allowed processor
  int machine_cores = 0;          // all physical cores of the machine
  int machine_pus = 0;            // all logical processors of the machine
  int numa_nodes = 1;
  CpuSet allowed;                 // sched_getaffinity of the process at detection
  std::optional<CgroupQuota> quota;
  int default_num_threads = 1;    // min(cores.size(), ceil(quota)), at least 1
  CpuSet machine_cpus;            // every logical processor of the machine
  std::string machine;            // "this machine", "synthetic \"package:2 ...\"", "XML file ..."
  int cpu_kinds = 0;              // hwloc cpukinds (0 or 1: all cores alike)

  // Cores of one NUMA node (-1: all).
  std::vector<Core> cores_of_node(int node) const;
  // min(cores of `node` (-1: all), ceil(quota)), at least 1.
  int default_threads_of_node(int node) const;
  // NUMA node of an allowed processor (-1 when it is not allowed).
  int node_of_cpu(int cpu) const;
  // "this machine: 8 physical cores, 16 logical processors 0-15, 2 NUMA node(s)"
  std::string describe_machine() const;
  std::string summary() const;
};

const Topology& topology();
Topology detect_topology();

// A machine to plan for: this one, or one that hwloc describes (simulation).
struct MachineInput {
  // "" = this machine; the path of an existing file = an hwloc XML export
  // (lstopo foo.xml); anything else = an hwloc synthetic description
  // ("package:2 numa:1 core:32 pu:2").
  std::string topology;
  // The processors the process may use. Unset: the process's affinity mask
  // for this machine, every processor for a simulated one.
  std::optional<CpuSet> allowed;
  // The CPU quota. Unset: the cgroup's for this machine, none for a
  // simulated one. Must be > 0.
  std::optional<double> cpu_quota;
};

// Loads the machine through hwloc and applies the mask and quota: the same
// computation for this machine (detect_topology) and a simulated one.
// Errors name the input (not a synthetic description nor a readable XML
// file, processors of the mask not on the machine, no allowed processor).
Result<Topology> load_topology(const MachineInput& input);

// "max 100000" -> nullopt, "150000 100000" -> 1.5; malformed -> nullopt.
std::optional<double> parse_cpu_max(const std::string& content);
// quota_us <= 0 means unlimited.
std::optional<double> parse_cfs_quota(const std::string& quota_us, const std::string& period_us);
// Looks up the quota of this process under `root` (normally /sys/fs/cgroup),
// reading `proc_cgroup` (normally the contents of /proc/self/cgroup); the
// smallest quota along the cgroup path wins.
std::optional<CgroupQuota> read_cgroup_quota(const std::string& root, const std::string& proc_cgroup);

// Affinity mask of the calling thread.
CpuSet current_thread_affinity();
// Moves the calling thread off processor `cpu` when its affinity mask allows
// another one: the mask without `cpu` is set (the kernel migrates the thread
// at once), then the previous mask is restored (which moves nothing).
// Returns whether the thread moved. For a pool worker that the scheduler
// woke onto its caller's busy processor (intra_pool_native.cpp).
bool step_off_cpu(int cpu);
CpuSet process_affinity();

}  // namespace spindle::detail

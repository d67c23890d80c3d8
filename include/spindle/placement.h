// spindle/placement.h — the thread plan spindle makes on a machine, this one
// or one described to hwloc (a synthetic description or an XML export), so
// the placement on a machine at hand can be checked before running there.
//
// The plan is what the pools would do: default thread counts (physical cores
// the process may use, capped by the CPU quota rounded up), and each worker's
// logical processor, core and NUMA node; for a machine with several NUMA
// nodes, also the intra-op pool of a session bound to each node
// (session.intra_op.numa_node). The thread-count environment variables
// (SPINDLE_INTRA_OP_NUM_THREADS, ...) apply as they would to a session.
#pragma once

#include <string>

#include "spindle/status.h"

namespace spindle {

struct MachineDescription {
  // "" = this machine; the path of an existing file = an hwloc XML export
  // (lstopo machine.xml); anything else = an hwloc synthetic description
  // ("package:2 numa:1 core:32 pu:2", see hwloc's documentation).
  std::string topology;
  // The processors the process may use, "0-15,32-47". "" = the process's
  // affinity mask on this machine, every processor on a described one.
  std::string cpuset;
  // CPU quota in CPUs (cgroup cpu.max quota / period). 0 = the cgroup's on
  // this machine, none on a described one.
  double cpu_quota = 0;
};

// Multi-line text, one line per worker. Errors name the input that was wrong
// (not a synthetic description nor an XML file, a processor not on the
// machine, a quota <= 0).
Result<std::string> placement_plan(const MachineDescription& machine);

}  // namespace spindle

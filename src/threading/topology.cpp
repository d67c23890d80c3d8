// topology.cpp — hwloc discovery, affinity mask and cgroup quota (see topology.h).
#include "threading/topology.h"

#include <hwloc.h>
#include <sched.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "spindle/cpu.h"

namespace spindle::detail {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

CpuSet cpuset_from_mask(const cpu_set_t& mask) {
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &mask)) cpus.push_back(c);
  return CpuSet(std::move(cpus));
}

}  // namespace

CpuSet process_affinity() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return {};
  return cpuset_from_mask(mask);
}

CpuSet current_thread_affinity() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (pthread_getaffinity_np(pthread_self(), sizeof(mask), &mask) != 0) return {};
  return cpuset_from_mask(mask);
}

bool step_off_cpu(int cpu) {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  if (cpu < 0 || cpu >= CPU_SETSIZE || pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) != 0) return false;
  if (!CPU_ISSET(cpu, &saved) || CPU_COUNT(&saved) < 2) return false;
  cpu_set_t others = saved;
  CPU_CLR(cpu, &others);
  if (pthread_setaffinity_np(pthread_self(), sizeof(others), &others) != 0) return false;
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  return true;
}

std::optional<double> parse_cpu_max(const std::string& content) {
  std::istringstream in(content);
  std::string quota, period;
  if (!(in >> quota >> period)) return std::nullopt;
  if (quota == "max") return std::nullopt;
  try {
    size_t used = 0;
    double q = std::stod(quota, &used);
    if (used != quota.size()) return std::nullopt;
    double p = std::stod(period, &used);
    if (used != period.size() || q <= 0 || p <= 0) return std::nullopt;
    return q / p;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<double> parse_cfs_quota(const std::string& quota_us, const std::string& period_us) {
  try {
    double q = std::stod(trim(quota_us));
    double p = std::stod(trim(period_us));
    if (q <= 0 || p <= 0) return std::nullopt;
    return q / p;
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<CgroupQuota> read_cgroup_quota(const std::string& root, const std::string& proc_cgroup) {
  std::optional<CgroupQuota> best;
  auto consider = [&](double cpus, const std::string& source) {
    if (!best || cpus < best->cpus) best = CgroupQuota{cpus, source};
  };
  // Walk from the process's cgroup up to the root: every ancestor's limit applies.
  auto walk = [&](const std::string& base, std::string path, auto&& read_limit) {
    for (;;) {
      read_limit(base + path);
      if (path.empty() || path == "/") break;
      size_t slash = path.find_last_of('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  };
  std::istringstream lines(proc_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // hierarchy-id:controllers:path
    size_t a = line.find(':');
    size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::string path = line.substr(b + 1);
    if (controllers.empty()) {  // cgroup v2
      walk(root, path, [&](const std::string& dir) {
        std::string file = (dir.back() == '/' ? dir : dir + "/") + "cpu.max";
        if (auto q = parse_cpu_max(read_file(file))) consider(*q, file);
      });
      continue;
    }
    std::stringstream cs(controllers);
    std::string c;
    bool has_cpu = false;
    while (std::getline(cs, c, ',')) has_cpu |= (c == "cpu");
    if (!has_cpu) continue;
    for (const std::string& mount : {root + "/" + controllers, root + "/cpu", root + "/cpu,cpuacct"}) {
      walk(mount, path, [&](const std::string& dir) {
        std::string d = dir.back() == '/' ? dir : dir + "/";
        std::string quota = read_file(d + "cpu.cfs_quota_us");
        if (quota.empty()) return;
        if (auto q = parse_cfs_quota(quota, read_file(d + "cpu.cfs_period_us"))) consider(*q, d + "cpu.cfs_quota_us");
      });
    }
  }
  return best;
}

std::vector<Core> Topology::cores_of_node(int node) const {
  if (node < 0) return cores;
  std::vector<Core> out;
  for (const Core& c : cores)
    if (c.numa_node == node) out.push_back(c);
  return out;
}

int Topology::default_threads_of_node(int node) const {
  int n = static_cast<int>(cores_of_node(node).size());
  if (quota) n = std::min(n, static_cast<int>(std::ceil(quota->cpus - 1e-9)));
  return std::max(1, n);
}

int Topology::node_of_cpu(int cpu) const {
  for (const Core& c : cores)
    if (c.pus.contains(cpu)) return c.numa_node;
  return -1;
}

std::string Topology::describe_machine() const {
  return fmt::format("{}: {} physical cores, {} logical processors {}, {} NUMA node(s)", machine, machine_cores,
                     machine_pus, machine_cpus.to_string(), numa_nodes);
}

std::string Topology::summary() const {
  std::string s = fmt::format("{} physical cores, {} logical processors, {} NUMA node(s) on the machine; "
                              "process may use processors {} = {} physical core(s)",
                              machine_cores, machine_pus, numa_nodes, allowed.to_string(), cores.size());
  if (quota) s += fmt::format("; cgroup CPU quota {:.2f} CPUs ({})", quota->cpus, quota->source);
  s += fmt::format("; default threads {}", default_num_threads);
  return s;
}

namespace {

// Reads the cores of a loaded hwloc topology, keeping the allowed processors.
void read_cores(hwloc_topology_t hw, Topology& topo) {
  topo.machine_pus = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_PU);
  std::vector<int> all;
  for (int i = 0; i < topo.machine_pus; ++i)
    all.push_back(static_cast<int>(hwloc_get_obj_by_type(hw, HWLOC_OBJ_PU, static_cast<unsigned>(i))->os_index));
  topo.machine_cpus = CpuSet(std::move(all));
  const int ncores = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_CORE);
  topo.numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE));
  topo.machine_cores = ncores;
  topo.cpu_kinds = std::max(0, hwloc_cpukinds_get_nr(hw, 0));
  for (int i = 0; i < ncores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(hw, HWLOC_OBJ_CORE, static_cast<unsigned>(i));
    std::vector<int> pus;
    unsigned id;
    hwloc_bitmap_foreach_begin(id, core->cpuset) {
      if (topo.allowed.contains(static_cast<int>(id))) pus.push_back(static_cast<int>(id));
    }
    hwloc_bitmap_foreach_end();
    if (pus.empty()) continue;
    int node = 0;
    if (core->nodeset && !hwloc_bitmap_iszero(core->nodeset)) {
      // The node's logical index (its OS index may have gaps).
      hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(hw, static_cast<unsigned>(hwloc_bitmap_first(core->nodeset)));
      node = n ? static_cast<int>(n->logical_index) : 0;
    }
    // hwloc orders cpukinds from the least to the most powerful.
    const int kind = topo.cpu_kinds > 1 ? std::max(0, hwloc_cpukinds_get_by_cpuset(hw, core->cpuset, 0)) : 0;
    topo.cores.push_back(Core{i, CpuSet(std::move(pus)), node, kind});
  }
}

}  // namespace

Result<Topology> load_topology(const MachineInput& input) {
  const bool real = input.topology.empty();
  Topology topo;
  if (real) {
    topo.machine = "this machine";
  } else {
    std::error_code ec;
    const bool file = std::filesystem::is_regular_file(input.topology, ec);
    topo.machine = file ? fmt::format("XML file {}", input.topology) : fmt::format("synthetic \"{}\"", input.topology);
  }
  if (input.cpu_quota && !(*input.cpu_quota > 0))
    return invalid_argument(fmt::format("CPU quota {}: expected a number of CPUs > 0", *input.cpu_quota));

  hwloc_topology_t hw;
  bool have_hwloc = hwloc_topology_init(&hw) == 0;
  if (have_hwloc) {
    // Whole-system view, so the process mask is applied by us, not by hwloc.
    hwloc_topology_set_flags(hw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (!real) {
      const bool xml = topo.machine.rfind("XML", 0) == 0;
      const int set = xml ? hwloc_topology_set_xml(hw, input.topology.c_str())
                          : hwloc_topology_set_synthetic(hw, input.topology.c_str());
      if (set != 0 || hwloc_topology_load(hw) != 0) {
        hwloc_topology_destroy(hw);
        return invalid_argument(fmt::format(
            "topology \"{}\": {}", input.topology,
            xml ? "hwloc cannot read this XML file (expected an export of lstopo, e.g. lstopo machine.xml)"
                : "neither an existing XML file nor an hwloc synthetic description (e.g. \"package:2 numa:1 "
                  "core:32 pu:2\", whose last level is pu)"));
      }
    } else if (hwloc_topology_load(hw) != 0) {
      hwloc_topology_destroy(hw);
      have_hwloc = false;
    }
  } else if (!real) {
    return invalid_argument(fmt::format("topology \"{}\": hwloc could not be initialized", input.topology));
  }

  if (input.allowed) topo.allowed = *input.allowed;
  else if (real) topo.allowed = process_affinity();
  if (have_hwloc) {
    if (!real && !input.allowed) {
      hwloc_const_cpuset_t all = hwloc_topology_get_complete_cpuset(hw);
      std::vector<int> cpus;
      unsigned id;
      hwloc_bitmap_foreach_begin(id, all) { cpus.push_back(static_cast<int>(id)); }
      hwloc_bitmap_foreach_end();
      topo.allowed = CpuSet(std::move(cpus));
    }
    read_cores(hw, topo);
    hwloc_topology_destroy(hw);
  }
  if (topo.cores.empty() && real) {  // no hwloc answer: every allowed processor is a core
    for (int cpu : topo.allowed.cpus())
      topo.cores.push_back(Core{static_cast<int>(topo.cores.size()), CpuSet::single(cpu), 0, 0});
    topo.machine_cores = topo.machine_pus = static_cast<int>(topo.cores.size());
    topo.machine_cpus = topo.allowed;
  }
  if (input.allowed) {
    for (int cpu : topo.allowed.cpus())
      if (!topo.machine_cpus.contains(cpu))
        return invalid_argument(fmt::format("CPU set {}: processor {} is not on the machine ({})",
                                            topo.allowed.to_string(), cpu, topo.describe_machine()));
    if (topo.cores.empty())
      return invalid_argument(fmt::format("CPU set {}: no processor of the machine is allowed ({})",
                                          topo.allowed.to_string(), topo.describe_machine()));
  }

  if (input.cpu_quota) topo.quota = CgroupQuota{*input.cpu_quota, "given"};
  else if (real) topo.quota = read_cgroup_quota("/sys/fs/cgroup", read_file("/proc/self/cgroup"));
  topo.default_num_threads = topo.default_threads_of_node(-1);
  return topo;
}

Topology detect_topology() {
  auto topo = load_topology(MachineInput{});
  return topo.is_ok() ? std::move(topo).value() : Topology{};
}

const Topology& topology() {
  static const Topology topo = detect_topology();
  return topo;
}

}  // namespace spindle::detail

namespace spindle {

const CpuTopology& cpu_topology() {
  static const CpuTopology info = [] {
    const detail::Topology& topo = detail::topology();
    CpuTopology c;
    c.usable_physical_cores = static_cast<int>(topo.cores.size());
    c.machine_physical_cores = topo.machine_cores;
    c.machine_logical_cpus = topo.machine_pus;
    c.numa_nodes = topo.numa_nodes;
    c.default_num_threads = topo.default_num_threads;
    c.summary = topo.summary();
    return c;
  }();
  return info;
}

}  // namespace spindle

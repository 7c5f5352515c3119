#include "storage/inventory.h"

#include <set>

#include "base/strings.h"

namespace tocsin::storage {
namespace {

// Lustre up to 2.16 keeps osc/mdc parameters in procfs; 2.17 moved them to debugfs.
constexpr const char* kLustreRoots[] = {"/proc/fs/lustre", "/sys/kernel/debug/lustre"};

void ScanLustreDevices(Env& env, Scan& scan) {
  std::set<std::string> seen;
  for (const char* root : kLustreRoots) {
    for (const char* kind : {"mdc", "osc"}) {
      std::string dir = std::string(root) + "/" + kind;
      auto names = env.ListDir(dir);
      if (!names.ok()) {
        if (names.status().code() != StatusCode::kNotFound) {
          scan.issues.push_back({std::string(kind) + " devices", dir, names.status()});
        }
        continue;
      }
      for (const auto& name : *names) {
        if (!seen.insert(name).second) continue;
        std::string dev_dir = dir + "/" + name;
        if (!env.IsDirectory(dev_dir)) continue;
        LustreDevice dev;
        dev.name = name;
        dev.kind = kind;
        dev.dir = dev_dir;
        auto text = env.ReadFile(dev_dir + "/import", 1 << 20);
        if (text.ok()) {
          auto imp = ParseLustreImport(*text);
          if (imp.ok()) {
            dev.import = *imp;
          } else {
            dev.issues.push_back(
                {"import", dev_dir + "/import", imp.status().WithPrefix(dev_dir + "/import")});
          }
        } else {
          dev.issues.push_back({"import", dev_dir + "/import", text.status()});
        }
        auto state = env.ReadFile(dev_dir + "/state", 1 << 20);
        if (state.ok()) {
          auto parsed = ParseLustreState(*state);
          if (parsed.ok()) dev.state = *parsed;
          // a malformed state file only costs us the onset time; import says the state
        }
        if (std::string_view(kind) == "osc") {
          // osc.*.stats is in debugfs whatever the release (ptlrpc_ldebugfs_register).
          std::string path = std::string("/sys/kernel/debug/lustre/osc/") + name + "/stats";
          auto stats_text = env.ReadFile(path, 1 << 20);
          if (stats_text.ok()) {
            auto stats = ParseLustreStats(*stats_text);
            if (stats.ok()) {
              dev.stats = *stats;
            } else {
              dev.issues.push_back({"stats", path, stats.status().WithPrefix(path)});
            }
          }
        }
        scan.lustre_devices.push_back(std::move(dev));
      }
    }
  }
}

void ScanLlite(Env& env, Scan& scan) {
  for (const char* root : {"/sys/kernel/debug/lustre", "/proc/fs/lustre"}) {
    std::string dir = std::string(root) + "/llite";
    auto names = env.ListDir(dir);
    if (!names.ok()) continue;
    for (const auto& name : *names) {
      if (scan.llite_stats.count(name)) continue;
      std::string path = dir + "/" + name + "/stats";
      auto text = env.ReadFile(path, 1 << 20);
      if (!text.ok()) continue;  // needs debugfs and root: optional
      auto stats = ParseLustreStats(*text);
      if (stats.ok()) {
        scan.llite_stats[name] = *stats;
      } else {
        scan.issues.push_back({"llite stats", path, stats.status().WithPrefix(path)});
      }
    }
  }
}

nlohmann::json Opt(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nullptr; }

}  // namespace

Scan ScanStorage(Env& env) {
  Scan scan;
  // Under --root (the agent's pod with the host's /proc mounted and hostPID), /proc/self is the
  // reader's own mount namespace: the host's mounts are those of its init, /proc/1 (as
  // node_exporter reads them). A fixture tree or a host without it falls back to self.
  Result<std::string> text = Status::NotFound("");
  if (env.root() != "/") {
    scan.mounts_path = "/proc/1/mountinfo";
    text = env.ReadFile(scan.mounts_path);
  }
  if (!text.ok()) {
    scan.mounts_path = "/proc/self/mountinfo";
    text = env.ReadFile(scan.mounts_path);
  }
  if (text.ok()) {
    scan.mounts = ParseMountInfo(*text);
  } else {
    auto fallback = env.ReadFile("/proc/mounts");
    if (fallback.ok()) {
      scan.mounts_path = "/proc/mounts";
      scan.mounts = ParseProcMounts(*fallback);
    } else {
      scan.mounts_error = ReadIssue{"mounts", scan.mounts_path, text.status()};
    }
  }
  for (const auto& e : scan.mounts.errors) {
    scan.issues.push_back(
        {"mounts", scan.mounts_path, Status::ParseError(scan.mounts_path + ": " + e)});
  }
  ScanLustreDevices(env, scan);
  ScanLlite(env, scan);
  return scan;
}

nlohmann::json ToJson(const Scan& scan) {
  nlohmann::json shared = nlohmann::json::array();
  nlohmann::json targets = nlohmann::json::array();  // a Lustre server's OSTs and MDTs
  for (const auto& m : scan.mounts.mounts) {
    if (IsLustreTarget(m)) {
      targets.push_back(
          {{"mount_point", m.mount_point}, {"fstype", m.fstype}, {"source", m.source}});
    }
    if (!IsSharedMount(m)) continue;
    nlohmann::json j = {{"mount_point", m.mount_point},
                        {"fstype", m.fstype},
                        {"source", m.source},
                        {"options", m.options}};
    if (m.fstype == "lustre") {
      auto src = ParseLustreSource(m.source);
      if (src.ok()) {
        j["lustre"] = {
            {"fsname", src->fsname}, {"subdir", src->subdir}, {"mgs_nodes", src->mgs_nodes}};
      } else {
        j["lustre"] = {{"error", src.status().ToString()}};
      }
    }
    shared.push_back(std::move(j));
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : scan.lustre_devices) {
    nlohmann::json j = {{"name", d.name}, {"type", d.kind}, {"dir", d.dir}};
    if (d.import) {
      j["target"] = d.import->target;
      j["state"] = d.import->state;
      j["current_connection"] = d.import->current_connection;
      j["failover_nids"] = d.import->failover_nids;
      j["connection_attempts"] = Opt(d.import->connection_attempts);
      j["rpcs_inflight"] = Opt(d.import->rpcs_inflight);
      j["rpcs_timeouts"] = Opt(d.import->rpcs_timeouts);
      j["avg_waittime_usecs"] = Opt(d.import->avg_waittime_usecs);
    }
    if (d.state) {
      nlohmann::json history = nlohmann::json::array();
      for (const auto& [t, s] : d.state->history) history.push_back({t, s});
      j["state_history"] = history;
    }
    j["read_errors"] = ToJson(d.issues);
    devices.push_back(std::move(j));
  }
  nlohmann::json llite = nlohmann::json::object();
  for (const auto& [name, stats] : scan.llite_stats) {
    nlohmann::json counters = nlohmann::json::object();
    for (const auto& c : stats.counters) {
      nlohmann::json cj = {{"count", c.count}, {"unit", c.unit}};
      if (c.sum) cj["sum"] = *c.sum;
      if (c.min) cj["min"] = *c.min;
      if (c.max) cj["max"] = *c.max;
      counters[c.name] = cj;
    }
    llite[name] = {
        {"snapshot_time", stats.snapshot_time ? nlohmann::json(*stats.snapshot_time) : nullptr},
        {"counters", counters}};
  }
  std::vector<ReadIssue> issues = scan.issues;
  if (scan.mounts_error) issues.push_back(*scan.mounts_error);
  return {{"mounts_source", scan.mounts_path}, {"mount_count", scan.mounts.mounts.size()},
          {"shared_mounts", shared},           {"lustre_targets", targets},
          {"lustre_devices", devices},         {"llite_stats", llite},
          {"read_errors", ToJson(issues)}};
}

}  // namespace tocsin::storage

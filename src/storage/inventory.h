#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "storage/lustre.h"
#include "storage/mounts.h"
#include "sys/env.h"
#include "sys/read_issue.h"

namespace tocsin::storage {

// One OSC or MDC device of a Lustre client.
struct LustreDevice {
  std::string name;  // "testfs-OST0001-osc-ffff8c5a4b6e9000"
  std::string kind;  // "osc" or "mdc"
  std::string dir;   // where it was found (procfs up to 2.16, debugfs from 2.17)
  std::optional<LustreImport> import;
  std::optional<LustreStateHistory> state;
  std::optional<LustreStats> stats;  // osc only: ptlrpc stats in debugfs (needs root)
  std::vector<ReadIssue> issues;
};

struct Scan {
  std::string mounts_path;  // the file the mount table came from
  MountTable mounts;
  std::optional<ReadIssue> mounts_error;
  std::vector<LustreDevice> lustre_devices;
  std::map<std::string, LustreStats> llite_stats;  // by llite instance ("testfs-ffff...")
  std::vector<ReadIssue> issues;
};

// Reads /proc/1/mountinfo under a --root other than "/" (the host's mounts seen from a pod),
// else /proc/self/mountinfo (falling back to /proc/mounts), and the Lustre client's import
// state and llite stats from procfs or debugfs.
Scan ScanStorage(Env& env);

nlohmann::json ToJson(const Scan& scan);

}  // namespace tocsin::storage

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tocsin::storage {

// Pure parsers for Lustre client text (lustre-release; formats in docs/FORMATS.md, "Lustre").

inline constexpr uint64_t kLustreSuperMagic = 0x0BD00BD0;

// Mount source "MGSNODE[:MGSNODE...]:/FSNAME[/SUBDIR]"; each MGSNODE is "NID[,NID...]".
struct LustreSource {
  std::vector<std::vector<std::string>> mgs_nodes;  // failover nodes, each a list of NIDs
  std::string fsname;
  std::string subdir;  // "" or "/sub/dir"
};
Result<LustreSource> ParseLustreSource(std::string_view source);

// osc.*.import / mdc.*.import (lprocfs_import_seq_show_locked).
struct LustreImport {
  std::string name;
  std::string target;
  std::string state;
  std::string current_connection;
  std::vector<std::string> failover_nids;
  std::optional<int64_t> connection_attempts;
  std::optional<int64_t> rpcs_inflight;
  std::optional<int64_t> rpcs_timeouts;
  std::optional<int64_t> avg_waittime_usecs;
};
Result<LustreImport> ParseLustreImport(std::string_view text);

// osc.*.state: "current_state: X" then "state_history:" and " - [ <epoch>, <STATE> ]" lines.
struct LustreStateHistory {
  std::string current_state;
  std::vector<std::pair<int64_t, std::string>> history;  // oldest first
};
Result<LustreStateHistory> ParseLustreState(std::string_view text);

// FULL and IDLE are healthy: an idle OSC reconnects on demand.
bool IsHealthyImportState(std::string_view state);
// Transient states of a reconnect or recovery (warning rather than error).
bool IsTransientImportState(std::string_view state);

// When the current unhealthy state began: the first history entry after the last healthy
// one. nullopt when the import is healthy or the history says nothing.
std::optional<int64_t> UnhealthySince(const LustreStateHistory& h);

// *.stats (lprocfs_stats_seq_show): header lines then
// "<name> <count> samples [<unit>] [<min> <max> <sum> [<sumsq>]]".
struct LustreCounter {
  std::string name;
  uint64_t count = 0;
  std::string unit;
  std::optional<uint64_t> min, max, sum, sumsq;
};
struct LustreStats {
  std::optional<double> snapshot_time;
  std::optional<double> elapsed_time;
  std::vector<LustreCounter> counters;
};
Result<LustreStats> ParseLustreStats(std::string_view text);

}  // namespace tocsin::storage

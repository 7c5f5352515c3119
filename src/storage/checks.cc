#include "storage/checks.h"

#include <fmt/format.h>

#include "storage/catalog.h"

namespace tocsin::storage {
namespace {

// The mount a path would land on: the longest mount point that is a path prefix of it.
const Mount* CoveringMount(const MountTable& table, const std::string& path) {
  const Mount* best = nullptr;
  for (const auto& m : table.mounts) {
    const std::string& mp = m.mount_point;
    bool covers =
        mp == "/" || path == mp ||
        (path.size() > mp.size() && path.compare(0, mp.size(), mp) == 0 && path[mp.size()] == '/');
    if (covers && (!best || mp.size() >= best->mount_point.size())) best = &m;
  }
  return best;
}

void CheckMounts(const Scan& scan, const std::vector<MountExpectation>& expect,
                 std::vector<Finding>& out) {
  if (scan.mounts_error && expect.empty()) {
    // Nothing was asked of the mounts, but what the node mounts cannot be known: said, not
    // silently "ok" (the shared-filesystem checks below have nothing to read either).
    out.push_back(UnknownFinding(kMountMissing, "mount table", scan.mounts_error->path,
                                 scan.mounts_error->error));
    return;
  }
  for (const auto& e : expect) {
    if (scan.mounts_error) {
      out.push_back(
          UnknownFinding(kMountMissing, e.path, scan.mounts_error->path, scan.mounts_error->error));
      continue;
    }
    const Mount* m = FindMount(scan.mounts, e.path);
    if (!m && !scan.mounts.errors.empty()) {
      // A line we could not parse may be that mount: say so rather than guess.
      out.push_back(UnknownFinding(
          kMountMissing, e.path, scan.mounts_path,
          Status::ParseError(e.path + " not found, and " +
                             std::to_string(scan.mounts.errors.size()) +
                             " line(s) could not be parsed: " + scan.mounts.errors.front())));
      continue;
    }
    if (!m) {
      const Mount* cover = CoveringMount(scan.mounts, e.path);
      nlohmann::json evidence = {{"expected_path", e.path}, {"expected_fstype", e.fstype}};
      std::string lands = "";
      if (cover) {
        evidence["covering_mount"] = cover->mount_point;
        evidence["covering_fstype"] = cover->fstype;
        lands = fmt::format(": reads and writes go to {} ({})", cover->mount_point, cover->fstype);
      }
      out.push_back({.check = kMountMissing,
                     .severity = Severity::kError,
                     .subject = e.path,
                     .message = fmt::format("{} is not mounted{}", e.path, lands),
                     .evidence = evidence});
      continue;
    }
    if (!e.fstype.empty() && m->fstype != e.fstype) {
      out.push_back(
          {.check = kMountType,
           .severity = Severity::kError,
           .subject = e.path,
           .message =
               fmt::format("{} is {} from {}, expected {}", e.path, m->fstype, m->source, e.fstype),
           .evidence = {
               {"fstype", m->fstype}, {"source", m->source}, {"expected_fstype", e.fstype}}});
    }
  }
}

// The state of a device's import: from its import file, else from its state file's
// current_state (the import may be unreadable while the state file is not).
struct ImportState {
  std::string state;
  std::string path;         // the file it came from
  const ReadIssue* unread;  // the import's read issue when the state file stood in
};

std::optional<ImportState> StateOf(const LustreDevice& d) {
  const ReadIssue* unread = nullptr;
  for (const auto& i : d.issues) {
    if (i.field == "import") unread = &i;
  }
  if (d.import) return ImportState{d.import->state, d.dir + "/import", nullptr};
  if (d.state) return ImportState{d.state->current_state, d.dir + "/state", unread};
  return std::nullopt;
}

void CheckLustre(const Scan& scan, std::vector<Finding>& out) {
  bool client_mounted = false;  // a Lustre server's own OST/MDT mounts are not clients
  for (const auto& m : scan.mounts.mounts) {
    client_mounted |= m.fstype == "lustre" && !IsLustreTarget(m);
  }
  if (client_mounted && scan.lustre_devices.empty()) {
    out.push_back(UnknownFinding(
        kLustreImportState, "lustre", "/proc/fs/lustre/osc",
        Status::NotFound("a Lustre filesystem is mounted but no OSC/MDC import is readable under "
                         "/proc/fs/lustre or /sys/kernel/debug/lustre (Lustre 2.17+ needs debugfs "
                         "mounted and root)")));
  }
  for (const auto& d : scan.lustre_devices) {
    auto st = StateOf(d);
    if (!st) {
      for (const auto& i : d.issues) {
        if (i.field == "import")
          out.push_back(UnknownFinding(kLustreImportState, d.name, i.path, i.error));
      }
      continue;
    }
    const std::string& state = st->state;
    if (IsHealthyImportState(state)) continue;
    Finding f;
    f.check = kLustreImportState;
    f.severity = IsTransientImportState(state) ? Severity::kWarning : Severity::kError;
    f.subject = d.name;
    std::string target = d.import && !d.import->target.empty() ? d.import->target : d.name;
    f.message = fmt::format("{} import of {} is {}", d.kind, target, state);
    if (state == "EVICTED") f.message += ": the server evicted this client; I/O to it fails";
    if (d.import && !d.import->current_connection.empty()) {
      f.message += " (connection " + d.import->current_connection + ")";
    }
    if (st->unread) f.message += " (from the state file: the import file could not be read)";
    if (d.state) {
      if (auto since = UnhealthySince(*d.state)) f.since = FromUnixSeconds(*since);
    }
    f.evidence = {{"state", state}, {"path", st->path}};
    if (d.import) {
      f.evidence["target"] = d.import->target;
      f.evidence["current_connection"] = d.import->current_connection;
      f.evidence["failover_nids"] = d.import->failover_nids;
      if (d.import->rpcs_timeouts) f.evidence["rpcs_timeouts"] = *d.import->rpcs_timeouts;
    }
    if (st->unread) f.evidence["import_error"] = st->unread->error.ToString();
    out.push_back(std::move(f));
  }
}

}  // namespace

Result<MountExpectation> ParseMountExpectation(std::string_view spec) {
  MountExpectation e;
  size_t colon = spec.rfind(':');
  std::string_view path = colon == std::string_view::npos ? spec : spec.substr(0, colon);
  if (colon != std::string_view::npos) e.fstype = std::string(spec.substr(colon + 1));
  if (path.empty() || path[0] != '/') {
    return Status::InvalidArgument(
        "--expect-mount wants PATH[:FSTYPE] with an absolute PATH, got \"" + std::string(spec) +
        "\"");
  }
  if (colon != std::string_view::npos && e.fstype.empty()) {
    return Status::InvalidArgument("--expect-mount \"" + std::string(spec) + "\": empty FSTYPE");
  }
  e.path = std::string(path);
  while (e.path.size() > 1 && e.path.back() == '/') e.path.pop_back();
  return e;
}

void CheckScan(const Scan& scan, const std::vector<MountExpectation>& expect,
               std::vector<Finding>& out) {
  CheckMounts(scan, expect, out);
  CheckLustre(scan, out);
}

}  // namespace tocsin::storage

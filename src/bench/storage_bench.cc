#include "bench/storage_bench.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "bench/harness.h"
#include "bench/payloads.h"
#include "bench/results.h"
#include "storage/mounts.h"
#include "sys/subprocess.h"

namespace tocsin::bench {
namespace {

using nlohmann::json;

const std::vector<std::string> kPhaseOrder = {"write",       "read",      "randread",   "fsync",
                                              "meta-create", "meta-stat", "meta-unlink"};

// Runs `fn` in a detached thread and waits at most `ms`: a call into a hung filesystem must not
// hold the caller.
template <typename T, typename F>
std::optional<T> Bounded(F fn, std::chrono::milliseconds ms) {
  auto p = std::make_shared<std::promise<T>>();
  auto f = p->get_future();
  std::thread([p, fn] { p->set_value(fn()); }).detach();
  if (f.wait_for(ms) != std::future_status::ready) return std::nullopt;
  return f.get();
}

std::string Num(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v); }

struct FsInfo {
  uint64_t magic = 0;
  std::string type, mount_point, source, mount_type, striping;
};

FsInfo ReadFsInfo(const std::string& path) {
  FsInfo info;
  struct statfs sf {};
  if (statfs(path.c_str(), &sf) == 0) {
    info.magic = static_cast<uint64_t>(sf.f_type) & 0xffffffffu;
    info.type = FsTypeName(info.magic);
  }
  char real[PATH_MAX];
  std::string where = realpath(path.c_str(), real) ? real : path;
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  storage::MountTable table = storage::ParseMountInfo(ss.str());
  // The mount that holds `where`: the longest mount point that is a path prefix of it (the
  // last one listed wins, as it is mounted on top).
  const storage::Mount* best = nullptr;
  for (const auto& m : table.mounts) {
    const std::string& mp = m.mount_point;
    bool under = where == mp || mp == "/" ||
                 (where.rfind(mp, 0) == 0 && where.size() > mp.size() && where[mp.size()] == '/');
    if (under && (!best || mp.size() >= best->mount_point.size())) best = &m;
  }
  if (best) {
    info.mount_point = best->mount_point;
    info.source = best->source;
    info.mount_type = best->fstype;
  }
  if (info.magic == 0x0BD00BD0) {
    sys::ProcessOptions po;
    po.timeout = std::chrono::seconds(5);
    auto r = sys::RunProcess({"lfs", "getstripe", "-d", path}, po);
    info.striping = !r.ok()             ? "lfs not available: " + r.status().message()
                    : r->exit_code == 0 ? std::string(r->out)
                                        : "lfs getstripe failed: " + r->err;
  } else {
    info.striping = "not Lustre";
  }
  return info;
}

void AddThresholdFindings(const StorageBenchOptions& o, const std::vector<PhaseResult>& phases,
                          const std::string& subject, Report& report) {
  double meta_p99 = 0;
  for (const auto& p : phases) {
    if (p.name.rfind("meta-", 0) == 0) meta_p99 = std::max(meta_p99, p.latency.p99 / 1e3);
    double min = p.name == "read" ? o.min_read_gbps : p.name == "write" ? o.min_write_gbps : 0;
    if (min > 0 && p.gbps() < min) {
      report.findings.push_back({"storage.throughput.low",
                                 Severity::kError,
                                 subject,
                                 fmt::format("{} {:.3f} GB/s is below --min-{}-gbps {:.3f}", p.name,
                                             p.gbps(), p.name, min),
                                 std::nullopt,
                                 {{"phase", p.name}, {"gbps", p.gbps()}, {"min_gbps", min}}});
    }
    if (p.name == "fsync" && o.max_fsync_p99_ms > 0 && p.latency.p99 / 1e3 > o.max_fsync_p99_ms) {
      report.findings.push_back(
          {"storage.latency.high",
           Severity::kError,
           subject,
           fmt::format("write+fsync p99 {:.2f} ms is above --max-fsync-p99-ms {:.2f}",
                       p.latency.p99 / 1e3, o.max_fsync_p99_ms),
           std::nullopt,
           {{"phase", "fsync"}, {"p99_ms", p.latency.p99 / 1e3}, {"max_ms", o.max_fsync_p99_ms}}});
    }
    if (p.wrong > 0) {
      report.findings.push_back(
          {"storage.data.wrong",
           Severity::kError,
           subject,
           fmt::format("{} blocks read back differ from what was written", p.wrong),
           std::nullopt,
           {{"phase", p.name}, {"wrong_blocks", p.wrong}}});
    }
  }
  if (o.max_meta_p99_ms > 0 && meta_p99 > o.max_meta_p99_ms) {
    report.findings.push_back(
        {"storage.latency.high",
         Severity::kError,
         subject,
         fmt::format("metadata p99 {:.2f} ms is above --max-meta-p99-ms {:.2f}", meta_p99,
                     o.max_meta_p99_ms),
         std::nullopt,
         {{"phase", "meta"}, {"p99_ms", meta_p99}, {"max_ms", o.max_meta_p99_ms}}});
  }
}

const std::vector<std::string> kPhaseColumns = {
    "PHASE", "GB/s", "IOPS", "OPS", "p50(us)", "p90(us)", "p99(us)", "p99.9(us)", "max(us)", "WRONG"};

std::vector<std::string> PhaseCells(const PhaseResult& p) {
  bool data = p.name == "write" || p.name == "read" || p.name == "randread";
  return {p.name,
          data ? Num(p.gbps()) : "-",
          Num(p.iops()),
          std::to_string(p.ops),
          Num(p.latency.p50),
          Num(p.latency.p90),
          Num(p.latency.p99),
          Num(p.latency.p999),
          Num(p.latency.max),
          p.wrong < 0 ? "-" : std::to_string(p.wrong)};
}

Table PhaseTable(const std::string& title, const std::vector<PhaseResult>& phases) {
  Table t{title, kPhaseColumns, {}, {}};
  for (const auto& p : phases) {
    t.rows.push_back(PhaseCells(p));
    if (!p.note.empty()) t.notes.push_back(p.name + ": " + p.note);
  }
  return t;
}

}  // namespace

std::string FsTypeName(uint64_t magic) {
  switch (magic) {
    case 0x0BD00BD0:
      return "lustre";
    case 0xEF53:
      return "ext4/ext3/ext2";
    case 0x58465342:
      return "xfs";
    case 0x01021994:
      return "tmpfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    case 0x794C7630:
      return "overlayfs";
    case 0x9123683E:
      return "btrfs";
    case 0x47504653:
      return "gpfs";
    case 0x19830326:
      return "beegfs";
    case 0x00C36400:
      return "ceph";
    case 0x2FC12FC1:
      return "zfs";
    case 0xFE534D42:
      return "smb2";
    default:
      return fmt::format("0x{:x}", magic);
  }
}

Status ValidateStorageBench(const StorageBenchOptions& o) {
  const ProbeOptions& p = o.probe;
  if (o.path.empty()) return Status::InvalidArgument("--path DIR is required");
  if (p.jobs < 1 || p.jobs > 1024) return Status::InvalidArgument("-j must be 1..1024");
  if (p.block < 4096 || p.block % 4096 != 0 || p.block > (1ull << 30)) {
    return Status::InvalidArgument("--block must be a multiple of 4K, at most 1G");
  }
  if (p.size < p.block || p.size % p.block != 0) {
    return Status::InvalidArgument("--size must be a multiple of --block");
  }
  if (p.size * p.jobs > (1ull << 40)) return Status::InvalidArgument("--size x -j is above 1T");
  if (p.files < 1 || p.fsync_ops < 1 || p.randread_ops < 1) {
    return Status::InvalidArgument("--files, --fsync-ops and --randread-ops must be >= 1");
  }
  for (const auto& ph : o.phases) {
    if (ph != "meta" &&
        std::find(kPhaseOrder.begin(), kPhaseOrder.end(), ph) == kPhaseOrder.end()) {
      return Status::InvalidArgument("unknown phase \"" + ph +
                                     "\" (write, read, randread, fsync, meta)");
    }
  }
  bool needs_data = std::any_of(o.phases.begin(), o.phases.end(), [](const std::string& ph) {
    return ph == "read" || ph == "randread";
  });
  bool writes = std::find(o.phases.begin(), o.phases.end(), "write") != o.phases.end();
  if (needs_data && !writes)
    return Status::InvalidArgument("read and randread need the write phase");
  return o.distributed ? ranks::Validate(o.world) : Status::Ok();
}

Result<StorageBenchResult> RunStorageBench(const StorageBenchOptions& o) {
  if (Status st = ValidateStorageBench(o); !st.ok()) return st;
  StorageBenchResult out;
  Report& report = out.report;
  report = BenchReport("bench storage", ranks::Hostname());
  int rank = o.distributed ? o.world.rank : 0;
  // The probe's own folder: an unpredictable name made atomically (mkdtemp, mode 0700), so that
  // nobody can plant a link or a folder there beforehand.
  std::string run_template =
      fmt::format("{}/tocsin-probe-{}-r{}-XXXXXX", o.path, ranks::Hostname(), rank);
  auto made = std::make_shared<std::string>();  // written by the bounded call, once
  std::string run_dir;
  // What the probe could not remove (a hung or failing filesystem): in a table and in the JSON
  // inventory, never left behind silently.
  std::vector<std::string> left_behind;
  auto note_left = [&](const std::string& where, const std::string& title) {
    left_behind.push_back(where);
    report.tables.push_back(
        {"CLEANUP", {title}, {{where}}, {"the filesystem did not answer: remove it when it does"}});
    report.inventory["left_behind"] = left_behind;
  };
  // Every call that touches the filesystem is bounded: a hung mount must still give a report.
  auto hung = [&](const std::string& what) {
    out.hung = true;
    report.findings.push_back(
        {"storage.timeout",
         Severity::kCritical,
         o.path,
         fmt::format("{}: no answer within {:.1f} s (the filesystem stopped answering)", what,
                     o.probe.op_timeout.count() / 1000.0),
         std::nullopt,
         {{"phase", "setup"},
          {"path", o.path},
          {"op_timeout_s", o.probe.op_timeout.count() / 1e3}}});
    // Its folder may have been made before the filesystem stopped answering: say where.
    note_left(run_dir.empty() ? run_template.substr(0, run_template.size() - 6) + "*" : run_dir,
              "MAY BE LEFT BEHIND");
    return out;
  };
  auto checked = Bounded<Status>(
      [path = o.path, run_template, made] {
        struct stat st {};
        if (stat(path.c_str(), &st) != 0)
          return Status::InvalidArgument("--path " + path + ": " + strerror(errno));
        if (!S_ISDIR(st.st_mode))
          return Status::InvalidArgument("--path " + path + " is not a directory");
        if (access(path.c_str(), W_OK) != 0) {
          return Status::InvalidArgument("--path " + path + " is not writable: " + strerror(errno));
        }
        std::string name = run_template;
        if (mkdtemp(name.data()) == nullptr) {
          return Status::InvalidArgument("cannot create " + run_template + ": " + strerror(errno));
        }
        *made = name;
        return Status::Ok();
      },
      o.probe.op_timeout);
  if (!checked) return hung("checking --path");
  if (!checked->ok()) return *checked;
  run_dir = *made;  // the call returned: written, and never again
  auto fs = Bounded<FsInfo>([path = o.path] { return ReadFsInfo(path); }, o.probe.op_timeout);
  if (!fs) return hung("statfs");

  std::unique_ptr<ranks::World> world;
  std::vector<ranks::Peer> peers;
  auto cleanup = [&](StorageProbe& probe) {
    std::vector<std::string> created = probe.Created();
    created.push_back(run_dir);
    if (!RemoveCreated(created, 3000)) note_left(run_dir, "LEFT BEHIND");
  };
  ProbeOptions po = o.probe;
  po.dir = run_dir;
  po.interrupted = o.interrupted;
  StorageProbe probe(po);
  if (o.distributed) {
    ranks::WorldOptions wo = o.world;
    wo.params =
        fmt::format("storage {} {} {} {} {}", o.path, po.size, po.block, po.jobs, po.direct);
    if (o.on_rendezvous) o.on_rendezvous(run_dir);
    auto w = ranks::World::Connect(wo);
    if (!w.ok()) {
      if (o.on_rendezvous) o.on_rendezvous("");
      cleanup(probe);
      report.findings.push_back(
          RankFailedFinding("storage.rank.failed", w.status().message(), rank));
      return out;
    }
    world = std::move(*w);
    if (rank == 0 && o.on_coordinator) o.on_coordinator(world->options().coordinator);
    auto p = world->Join(ranks::Hostname());
    if (o.on_rendezvous) o.on_rendezvous("");
    if (!p.ok()) {
      cleanup(probe);
      report.findings.push_back(RankFailedFinding("storage.rank.failed", p.status().message(),
                                                  rank, world->aborted_by()));
      return out;
    }
    peers = *p;
  }
  std::vector<std::string> phases;
  for (const auto& name : kPhaseOrder) {
    bool meta = name.rfind("meta-", 0) == 0;
    if (std::find(o.phases.begin(), o.phases.end(), meta ? "meta" : name) != o.phases.end()) {
      phases.push_back(name);
    }
  }
  std::vector<PhaseResult> results;
  std::atomic<bool>* stop = probe.stop_flag();
  for (const auto& phase : phases) {
    if (world) {
      if (Status st = world->Barrier(); !st.ok()) {
        report.findings.push_back(RankFailedFinding("storage.rank.failed", st.message(), rank,
                                                    world->aborted_by()));
        break;
      }
    }
    if (o.interrupted && o.interrupted->load()) stop->store(true);
    auto r = probe.Run(phase);
    if (!r.ok()) {
      if (probe.timeout()) {
        const ProbeTimeout& t = *probe.timeout();
        out.hung = true;
        report.findings.push_back(
            {"storage.timeout",
             Severity::kCritical,
             t.path,
             fmt::format("phase {}: an operation on {} did not return within {:.1f} s: the "
                         "filesystem stopped answering",
                         t.phase, t.path, o.probe.op_timeout.count() / 1000.0),
             std::nullopt,
             {{"phase", t.phase},
              {"path", t.path},
              {"waited_s", t.waited_s},
              {"op_timeout_s", o.probe.op_timeout.count() / 1e3}}});
        if (world) world->Abort("storage.timeout on " + t.path + " in phase " + t.phase);
        break;
      }
      if (r.status().message() == "interrupted") {
        out.interrupted = true;
        report.tables.push_back({"INTERRUPTED", {"PHASE"}, {{phase}}, {"stopped by a signal"}});
        break;
      }
      cleanup(probe);
      if (world) world->Abort(r.status().message());
      return r.status();
    }
    results.push_back(*r);
    if (o.on_progress && rank == 0) {
      if (results.size() == 1) {
        o.on_progress("# phases on this node, as each finishes\n" +
                      ProgressLine(kPhaseColumns, true));
      }
      o.on_progress(ProgressLine(PhaseCells(*r)));
    }
  }
  if (!out.hung) {
    cleanup(probe);
  } else {
    note_left(run_dir, "LEFT BEHIND");  // on a hung filesystem unlink would hang too
  }
  if (world) {
    report.tables.push_back(
        SetupTable(peers, fmt::format("{} ranks, one shared path: {}", peers.size(), o.path)));
  }
  report.tables.push_back({"FILESYSTEM",
                           {"PATH", "TYPE", "MOUNT", "SOURCE", "STRIPING"},
                           {{o.path, fs->type, fs->mount_point, fs->source, fs->striping}},
                           {}});
  report.tables.push_back(PhaseTable("PHASES (this node)", results));
  json phases_json = json::array();
  for (const auto& p : results) phases_json.push_back(PhaseJson(p));
  report.inventory = {{"path", o.path},
                      {"filesystem",
                       {{"type", fs->type},
                        {"magic", fmt::format("0x{:x}", fs->magic)},
                        {"mount_point", fs->mount_point},
                        {"source", fs->source},
                        {"striping", fs->striping}}},
                      {"options",
                       {{"jobs", po.jobs},
                        {"size", po.size},
                        {"block", po.block},
                        {"direct", po.direct},
                        {"shared_file", po.shared_file}}},
                      {"phases", phases_json}};
  if (world) report.inventory["ranks"] = RanksJson(peers);
  if (!left_behind.empty()) report.inventory["left_behind"] = left_behind;
  AddThresholdFindings(o, results, o.path, report);
  if (world && !out.hung && !out.interrupted && results.size() == phases.size()) {
    auto all = world->AllGather(MaybeCorrupt(rank, EncodePhases(ranks::Hostname(), results)));
    if (!all.ok()) {
      report.findings.push_back(
          RankFailedFinding("storage.rank.failed", all.status().message(), rank));
      return out;
    }
    // Aggregate: bytes of every node over the slowest node's time (the phases start together).
    // Another node's results are checked first: a malformed one is that node's failure.
    std::vector<std::vector<PhaseResult>> nodes;
    for (size_t r = 0; r < all->size(); ++r) {
      auto decoded = DecodePhases((*all)[r], phases);
      if (!decoded.ok()) {
        std::string reason =
            peers[r].Name() + " sent malformed results: " + decoded.status().message();
        world->Abort(reason);
        report.findings.push_back(
            RankFailedFinding("storage.rank.failed", reason, rank, peers[r].Name()));
        return out;
      }
      nodes.push_back(std::move(*decoded));
    }
    world->Leave();
    std::vector<PhaseResult> agg;
    for (size_t i = 0; i < results.size(); ++i) {
      PhaseResult a;
      a.name = results[i].name;
      for (const auto& n : nodes) {
        a.bytes += n[i].bytes;
        a.ops += n[i].ops;
        a.seconds = std::max(a.seconds, n[i].seconds);
      }
      agg.push_back(a);
    }
    Table per_node{"NODES", {"RANK", "HOST", "WRITE GB/s", "READ GB/s", "FSYNC p99(us)"}, {}, {}};
    json nodes_json = json::array();
    std::map<std::string, std::vector<double>> by_phase;
    for (size_t r = 0; r < nodes.size(); ++r) {
      std::map<std::string, const PhaseResult*> m;
      for (const auto& p : nodes[r]) m[p.name] = &p;
      auto gb = [&](const char* n) { return m.count(n) ? m[n]->gbps() : 0.0; };
      per_node.rows.push_back({std::to_string(r), peers[r].host, Num(gb("write")), Num(gb("read")),
                               m.count("fsync") ? Num(m["fsync"]->latency.p99) : "-"});
      nodes_json.push_back({{"rank", r},
                            {"host", peers[r].host},
                            {"ip", peers[r].ip},
                            {"write_gbps", gb("write")},
                            {"read_gbps", gb("read")}});
      for (const char* n : {"write", "read"}) {
        if (m.count(n)) by_phase[n].push_back(gb(n));
      }
    }
    for (const auto& [phase, values] : by_phase) {
      Stragglers stragglers = FindStragglers(values, o.straggler_ratio);
      for (size_t r : stragglers.slow) {
        report.findings.push_back(
            {"storage.node.slow",
             Severity::kWarning,
             peers[r].Name(),
             fmt::format("{} {:.3f} GB/s is under {:.0f}% of the median node ({:.3f} GB/s)",
                         phase, values[r], o.straggler_ratio * 100, stragglers.median),
             std::nullopt,
             {{"phase", phase}, {"gbps", values[r]}, {"median_gbps", stragglers.median}}});
      }
    }
    report.tables.push_back(per_node);
    Table aggregate = PhaseTable("AGGREGATE (all nodes; bytes over the slowest node's time)", agg);
    report.tables.push_back(aggregate);
    json agg_json = json::array();
    for (const auto& a : agg) {
      agg_json.push_back({{"phase", a.name},
                          {"bytes", a.bytes},
                          {"seconds", a.seconds},
                          {"gbps", a.gbps()},
                          {"iops", a.iops()}});
    }
    report.inventory["nodes"] = nodes_json;
    report.inventory["aggregate"] = agg_json;
  } else if (world && !out.hung) {
    world->Leave();
  }
  return out;
}

}  // namespace tocsin::bench

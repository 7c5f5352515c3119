#include "bench/storage_bench.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include "bench/fs_info.h"
#include "bench/harness.h"
#include "bench/payloads.h"
#include "bench/results.h"
#include "bench/storage_results.h"
#include "storage/catalog.h"
#include "sys/bounded_call.h"

namespace tocsin::bench {
namespace {

const std::vector<std::string> kPhaseOrder = {"write",       "read",      "randread",   "fsync",
                                              "meta-create", "meta-stat", "meta-unlink"};

// The phases asked for ("meta" is its three phases), in the order they run.
std::vector<std::string> PhasesToRun(const std::vector<std::string>& asked) {
  std::vector<std::string> phases;
  for (const auto& name : kPhaseOrder) {
    bool meta = name.starts_with("meta-");
    if (std::find(asked.begin(), asked.end(), meta ? "meta" : name) != asked.end()) {
      phases.push_back(name);
    }
  }
  return phases;
}

// Checks `path` and makes the probe's own folder in it from `run_template`: an unpredictable
// name made atomically (mkdtemp, mode 0700), so that nobody can plant a link or a folder there
// beforehand. `*made` is the folder.
Status MakeRunDir(const std::string& path, const std::string& run_template, std::string* made) {
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
}

// One run of the storage benchmark on this rank, as its steps: Prepare, Meet, RunPhases, Finish.
// Every call that touches the filesystem is bounded: a hung mount still gives a report.
class StorageRun {
 public:
  explicit StorageRun(const StorageBenchOptions& o)
      : o_(o), rank_(o.distributed ? o.world.rank : 0), phases_(PhasesToRun(o.phases)) {
    out_.report = BenchReport("bench storage", ranks::Hostname());
    run_template_ = fmt::format("{}/tocsin-probe-{}-r{}-XXXXXX", o.path, ranks::Hostname(), rank_);
  }

  // Checks --path, makes the run's folder and reads what filesystem holds it. A bad --path is
  // an error; a filesystem that does not answer ends the run (done()) with storage.timeout.
  Status Prepare() {
    auto made = std::make_shared<std::string>();  // written by the bounded call, once
    auto checked = sys::BoundedCall(o_.probe.op_timeout, [path = o_.path, tmpl = run_template_, made] {
      return MakeRunDir(path, tmpl, made.get());
    });
    if (!checked) return SetupHung("checking --path");
    if (!checked->ok()) return *checked;
    run_dir_ = *made;  // the call returned: written, and never again
    std::shared_ptr<Env> env = NewRootedEnv();
    auto fs = sys::BoundedCall(o_.probe.op_timeout, [env, path = o_.path] { return ReadFsInfo(*env, path); });
    if (!fs) return SetupHung("statfs");
    fs_ = *fs;
    po_ = o_.probe;
    po_.dir = run_dir_;
    po_.interrupted = o_.interrupted;
    probe_ = std::make_unique<StorageProbe>(po_);
    return Status::Ok();
  }

  // Distributed: meets the other ranks. false: that failed (done(), the report says why).
  bool Meet() {
    if (!o_.distributed) return true;
    ranks::WorldOptions wo = o_.world;
    wo.params =
        fmt::format("storage {} {} {} {} {}", o_.path, po_.size, po_.block, po_.jobs, po_.direct);
    if (o_.on_rendezvous) o_.on_rendezvous(run_dir_);
    auto w = ranks::World::Connect(wo);
    if (!w.ok()) {
      if (o_.on_rendezvous) o_.on_rendezvous("");
      return MeetFailed(w.status().message(), "");
    }
    world_ = std::move(*w);
    if (rank_ == 0 && o_.on_coordinator) o_.on_coordinator(world_->options().coordinator);
    auto p = world_->Join(ranks::Hostname());
    if (o_.on_rendezvous) o_.on_rendezvous("");
    if (!p.ok()) return MeetFailed(p.status().message(), world_->aborted_by());
    peers_ = *p;
    return true;
  }

  // The phases in order, each started together on every rank. A failing probe is an error; a
  // hung filesystem, a signal or a failed rank end the phases early with what the report says.
  Status RunPhases() {
    std::atomic<bool>* stop = probe_->stop_flag();
    for (const auto& phase : phases_) {
      if (world_) {
        if (Status st = world_->Barrier(); !st.ok()) {
          report().findings.push_back(
              RankFailedFinding(storage::kRankFailed, st.message(), rank_, world_->aborted_by()));
          break;
        }
      }
      if (o_.interrupted && o_.interrupted->load()) stop->store(true);
      auto r = probe_->Run(phase);
      if (!r.ok()) {
        if (probe_->timeout()) {
          PhaseHung(*probe_->timeout());
          break;
        }
        if (r.status().message() == "interrupted") {
          out_.interrupted = true;
          report().tables.push_back({"INTERRUPTED", {"PHASE"}, {{phase}}, {"stopped by a signal"}});
          break;
        }
        CleanUp();
        if (world_) world_->Abort(r.status().message());
        return r.status();
      }
      results_.push_back(*r);
      Progress(*r);
    }
    return Status::Ok();
  }

  // Cleans up, reports this node and, when every rank ran every phase, all of them.
  void Finish() {
    if (!out_.hung) {
      CleanUp();
    } else {
      NoteLeft(run_dir_, "LEFT BEHIND");  // on a hung filesystem unlink would hang too
    }
    if (world_) {
      report().tables.push_back(
          SetupTable(peers_, fmt::format("{} ranks, one shared path: {}", peers_.size(), o_.path)));
    }
    AddNodeResults(o_, po_, fs_, results_, report());
    if (world_) report().inventory["ranks"] = RanksJson(peers_);
    if (!left_behind_.empty()) report().inventory["left_behind"] = left_behind_;
    if (world_ && !out_.hung && !out_.interrupted && results_.size() == phases_.size()) {
      GatherAllNodes();
    } else if (world_ && !out_.hung) {
      world_->Leave();
    }
  }

  bool done() const { return done_; }
  StorageBenchResult Take() { return std::move(out_); }

 private:
  Report& report() { return out_.report; }

  // What the probe could not remove (a hung or failing filesystem): in a table and in the JSON
  // inventory, never left behind silently.
  void NoteLeft(const std::string& where, const std::string& title) {
    left_behind_.push_back(where);
    report().tables.push_back(
        {"CLEANUP", {title}, {{where}}, {"the filesystem did not answer: remove it when it does"}});
    report().inventory["left_behind"] = left_behind_;
  }

  void CleanUp() {
    std::vector<std::string> created = probe_->Created();
    created.push_back(run_dir_);
    if (!RemoveCreated(created, 3000)) NoteLeft(run_dir_, "LEFT BEHIND");
  }

  // Setting up did not return in time: storage.timeout, and the run ends.
  Status SetupHung(const std::string& what) {
    out_.hung = true;
    done_ = true;
    report().findings.push_back(
        {storage::kTimeout,
         Severity::kCritical,
         o_.path,
         fmt::format("{}: no answer within {:.1f} s (the filesystem stopped answering)", what,
                     o_.probe.op_timeout.count() / 1000.0),
         std::nullopt,
         {{"phase", "setup"},
          {"path", o_.path},
          {"op_timeout_s", o_.probe.op_timeout.count() / 1e3}}});
    // Its folder may have been made before the filesystem stopped answering: say where.
    NoteLeft(run_dir_.empty() ? run_template_.substr(0, run_template_.size() - 6) + "*" : run_dir_,
             "MAY BE LEFT BEHIND");
    return Status::Ok();
  }

  // An operation of a phase did not return in time: storage.timeout, and every rank stops.
  void PhaseHung(const ProbeTimeout& t) {
    out_.hung = true;
    report().findings.push_back(
        {storage::kTimeout,
         Severity::kCritical,
         t.path,
         fmt::format("phase {}: an operation on {} did not return within {:.1f} s: the "
                     "filesystem stopped answering",
                     t.phase, t.path, o_.probe.op_timeout.count() / 1000.0),
         std::nullopt,
         {{"phase", t.phase},
          {"path", t.path},
          {"waited_s", t.waited_s},
          {"op_timeout_s", o_.probe.op_timeout.count() / 1e3}}});
    if (world_) world_->Abort("storage.timeout on " + t.path + " in phase " + t.phase);
  }

  bool MeetFailed(const std::string& reason, const std::string& culprit) {
    CleanUp();
    report().findings.push_back(RankFailedFinding(storage::kRankFailed, reason, rank_, culprit));
    done_ = true;
    return false;
  }

  // Rank 0, table output: each phase as it finishes.
  void Progress(const PhaseResult& r) {
    if (!o_.on_progress || rank_ != 0) return;
    if (results_.size() == 1) {
      o_.on_progress("# phases on this node, as each finishes\n" +
                     ProgressLine(PhaseColumns(), true));
    }
    o_.on_progress(ProgressLine(PhaseCells(r)));
  }

  // Every rank's phases to every rank; another node's results are checked first: a malformed
  // one is that node's failure.
  void GatherAllNodes() {
    auto all = world_->AllGather(MaybeCorrupt(rank_, EncodePhases(ranks::Hostname(), results_)));
    if (!all.ok()) {
      report().findings.push_back(
          RankFailedFinding(storage::kRankFailed, all.status().message(), rank_));
      return;
    }
    std::vector<std::vector<PhaseResult>> nodes;
    for (size_t r = 0; r < all->size(); ++r) {
      auto decoded = DecodePhases((*all)[r], phases_);
      if (!decoded.ok()) {
        std::string reason =
            peers_[r].Name() + " sent malformed results: " + decoded.status().message();
        world_->Abort(reason);
        report().findings.push_back(
            RankFailedFinding(storage::kRankFailed, reason, rank_, peers_[r].Name()));
        return;
      }
      nodes.push_back(std::move(*decoded));
    }
    world_->Leave();
    AddAllNodesResults(peers_, nodes, o_.straggler_ratio, report());
  }

  const StorageBenchOptions& o_;
  const int rank_;
  const std::vector<std::string> phases_;
  StorageBenchResult out_;
  bool done_ = false;
  std::string run_template_, run_dir_;
  std::vector<std::string> left_behind_;
  FsInfo fs_;
  ProbeOptions po_;
  std::unique_ptr<StorageProbe> probe_;
  std::unique_ptr<ranks::World> world_;
  std::vector<ranks::Peer> peers_;
  std::vector<PhaseResult> results_;
};

}  // namespace

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
  TOCSIN_RETURN_IF_ERROR(ValidateStorageBench(o));
  StorageRun run(o);
  TOCSIN_RETURN_IF_ERROR(run.Prepare());
  if (!run.done() && run.Meet()) {
    TOCSIN_RETURN_IF_ERROR(run.RunPhases());
    run.Finish();
  }
  StorageBenchResult out = run.Take();
  SortFindings(out.report.findings);
  return out;
}

}  // namespace tocsin::bench

#include "agent/nccl_task.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "agent/families.h"
#include "nccl/analyzer.h"
#include "nccl/reader.h"
#include "nccl/catalog.h"
#include "rdma/inventory.h"
#include "sys/env.h"

namespace tocsin::agent {
namespace {

constexpr const char* kPodLogs = "/var/log/pods";
// A pod's log is the pod's to write: what the task keeps of all of them is capped (the DaemonSet's
// memory limit is 128 Mi). Per file: a real job's processes (a launcher's log holds every rank's
// lines) and 4 MiB of what they logged; 16 MiB over all files; 1,024 process series.
constexpr size_t kFileMaxProcesses = nccl::kDefaultMaxProcesses;
constexpr size_t kFileMaxBytes = 4 << 20;
constexpr size_t kTotalMaxBytes = 16 << 20;
constexpr size_t kMaxProcessSeries = 1024;

// The checks a pod's log can fail (nccl.log.no-debug is left out: most pods are not NCCL jobs).
const std::set<std::string> kChecks = {nccl::kTransportSocket, nccl::kTransportMixed,
                                       nccl::kInitFailed, nccl::kEnvRisky, nccl::kWrong};

struct LogFile {
  std::string ns, pod, container;
  ino_t inode = 0;
  nccl::LogCursor cursor;  // where the last read stopped
  std::unique_ptr<nccl::Analyzer> analyzer;
  bool rdma_expected = false;
  Status read;  // the last read's error: this pod's checks are unknown while it lasts
};

struct State {
  std::mutex mu;                         // runs never overlap; the lock documents it
  std::map<std::string, LogFile> files;  // by path under the root
};

// "<ns>_<pod>_<uid>": the namespace has no '_' and the uid none either.
bool SplitPodDir(const std::string& dir, LogFile& f) {
  size_t first = dir.find('_');
  size_t last = dir.rfind('_');
  if (first == std::string::npos || last == first) return false;
  f.ns = dir.substr(0, first);
  f.pod = dir.substr(first + 1, last - first - 1);
  return true;
}

// Reads what is new in the log at node path `path` (through `env`) into the file's analyzer,
// which keeps at most `max_bytes` of what the processes logged.
Status ReadNew(Env& env, const std::string& path, LogFile& f, uint64_t budget, size_t max_bytes) {
  TOCSIN_ASSIGN_OR_RETURN(int fd, env.OpenFile(path));  // a FIFO cannot block the task
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::IoError(path + ": cannot stat");
  }
  if (!f.analyzer || st.st_ino != f.inode || static_cast<uint64_t>(st.st_size) < f.cursor.offset) {
    // Rotated or truncated: a new file from its start, analysed afresh.
    f.inode = st.st_ino;
    f.cursor = {};
    nccl::Options o;
    o.expect_rdma = f.rdma_expected;
    f.analyzer = std::make_unique<nccl::Analyzer>(o);
    f.analyzer->BeginInput(f.ns + "/" + f.pod + "/" + f.container);
  }
  f.analyzer->SetLimits(kFileMaxProcesses, max_bytes);
  Status read =
      nccl::ReadAppended(fd, static_cast<uint64_t>(st.st_size), budget, f.cursor, *f.analyzer);
  ::close(fd);
  if (!read.ok()) return Status::IoError(path + ": " + read.message());
  return Status::Ok();
}

}  // namespace

TaskSpec NcclLogTask(const std::string& root, uint64_t max_bytes_per_run) {
  return NcclLogTask([root] { return NewRootedEnv(root); }, max_bytes_per_run);
}

TaskSpec NcclLogTask(std::function<std::unique_ptr<Env>()> new_env, uint64_t max_bytes_per_run) {
  TaskSpec t;
  t.name = "nccl";
  t.checks = {kChecks.begin(), kChecks.end()};
  auto state = std::make_shared<State>();
  t.run = [new_env, max_bytes_per_run, state]() -> Result<TaskOutput> {
    std::lock_guard<std::mutex> lock(state->mu);
    auto env = new_env();
    // The fallback is only a fault where there is a fabric to fall back from.
    bool rdma_here = false;
    for (const auto& d : rdma::ScanDevices(*env).devices) {
      for (const auto& p : d.ports) rdma_here |= p.active();
    }
    TaskOutput out;
    auto pods = env->ListDir(kPodLogs);
    if (!pods.ok()) {
      if (pods.status().code() == StatusCode::kNotFound) {
        state->files.clear();
        return out;  // no pod logs here (not a kubelet node, or not mounted): nothing to read
      }
      return pods.status();
    }
    std::set<std::string> seen;
    size_t kept = 0;  // bytes the files' analyzers hold
    for (const auto& [path, f] : state->files) kept += f.analyzer ? f.analyzer->stored_bytes() : 0;
    for (const auto& pod_dir : *pods) {
      LogFile id;
      if (!SplitPodDir(pod_dir, id)) continue;
      std::string pod_path = std::string(kPodLogs) + "/" + pod_dir;
      auto containers = env->ListDir(pod_path);
      if (!containers.ok()) continue;
      for (const auto& c : *containers) {
        auto logs = env->ListDir(pod_path + "/" + c);
        if (!logs.ok()) continue;
        for (const auto& name : *logs) {
          if (name.size() < 5 || name.compare(name.size() - 4, 4, ".log") != 0) continue;
          std::string path = pod_path + "/" + c + "/" + name;
          seen.insert(path);
          LogFile& f = state->files[path];
          if (f.pod.empty()) {
            f.ns = id.ns;
            f.pod = id.pod;
            f.container = c;
          }
          if (f.rdma_expected != rdma_here) {
            f.rdma_expected = rdma_here;
            f.inode = 0;  // re-read with the new expectation
          }
          size_t mine = f.analyzer ? f.analyzer->stored_bytes() : 0;
          kept -= mine;
          size_t room = kTotalMaxBytes > kept ? kTotalMaxBytes - kept : 0;
          f.read = ReadNew(*env, path, f, max_bytes_per_run, std::min(kFileMaxBytes, room));
          kept += f.analyzer ? f.analyzer->stored_bytes() : 0;
          if (f.read.code() == StatusCode::kNotFound) seen.erase(path);  // gone since the listing
        }
      }
    }
    for (auto it = state->files.begin(); it != state->files.end();) {
      it = seen.count(it->first) ? std::next(it) : state->files.erase(it);  // pod gone
    }
    Families fam;
    uint64_t dropped_lines = 0, dropped_series = 0;
    size_t series = 0;
    for (const auto& [path, f] : state->files) {
      std::string subject = f.ns + "/" + f.pod;
      if (!f.read.ok()) {
        // The log could not be read (or not all of it): its checks cannot say ok for this pod.
        for (const auto& check : kChecks) {
          out.findings.push_back(UnknownFinding(check, subject, path, f.read));
        }
      }
      if (!f.analyzer) continue;
      if (f.analyzer->Capped()) {
        // What was left out may hold the fallback: the checks cannot say ok for this pod.
        dropped_lines += f.analyzer->dropped_lines();
        Status why = Status::Unavailable(fmt::format(
            "{} NCCL lines of this log were not analysed (more than {} processes or {} MiB of "
            "what they logged)",
            f.analyzer->dropped_lines(), kFileMaxProcesses, kFileMaxBytes >> 20));
        for (const auto& check : kChecks) {
          out.findings.push_back(UnknownFinding(check, subject, path, why));
        }
      }
      if (f.analyzer->processes().empty()) continue;
      Labels pod = {{"namespace", f.ns}, {"pod", f.pod}, {"container", f.container}};
      for (const auto& [key, p] : f.analyzer->processes()) {
        if (series >= kMaxProcessSeries) {
          dropped_series++;
          continue;
        }
        series++;
        Labels l = pod;
        l.push_back({"host", p.host});
        l.push_back({"pid", p.pid >= 0 ? std::to_string(p.pid) : ""});  // "": not logged
        l.push_back({"transport", p.TransportLabel()});
        l.push_back({"network", p.network});
        fam.Family("tocsin_nccl_process_info",
                   "Constant 1 per NCCL process in a pod's log on this node: the network its "
                   "inter-node traffic used (IB, Socket, ...) and the one it chose at init.",
                   prometheus::MetricType::Gauge)
            .Add(std::move(l), 1);
      }
      for (Finding finding : f.analyzer->Findings()) {
        if (!kChecks.count(finding.check)) continue;
        finding.subject = subject + ": " + finding.subject;
        finding.evidence["namespace"] = f.ns;
        finding.evidence["pod"] = f.pod;
        finding.evidence["container"] = f.container;
        out.findings.push_back(std::move(finding));
      }
    }
    fam.Family("tocsin_nccl_log_files", "Pod log files the nccl task follows on this node.",
               prometheus::MetricType::Gauge)
        .Add({}, static_cast<double>(state->files.size()));
    fam.Family("tocsin_nccl_dropped",
               "What the nccl task left out at its caps: `lines`, NCCL lines of the followed logs "
               "not analysed (their checks are unknown); `series`, tocsin_nccl_process_info "
               "series not exported.",
               prometheus::MetricType::Gauge)
        .Add({{"what", "lines"}}, static_cast<double>(dropped_lines))
        .Add({{"what", "series"}}, static_cast<double>(dropped_series));
    out.families = fam.Take();
    return out;
  };
  return t;
}

}  // namespace tocsin::agent

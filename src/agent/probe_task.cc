#include "agent/probe_task.h"

#include <prometheus/histogram.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agent/catalog.h"
#include "agent/families.h"
#include "base/strings.h"
#include "storage/catalog.h"
#include "sys/subprocess.h"

namespace tocsin::agent {
namespace {

// bench storage phase -> the op label.
const char* OpName(const std::string& phase) {
  if (phase == "write") return "write";
  if (phase == "read") return "read";
  if (phase == "fsync") return "write_fsync";
  if (phase == "meta-create") return "create";
  if (phase == "meta-stat") return "stat";
  if (phase == "meta-unlink") return "unlink";
  return nullptr;
}

Finding ProbeFinding(const std::string& path, const std::string& message, nlohmann::json evidence) {
  return {.check = kStorageProbe,
          .severity = Severity::kError,
          .subject = path,
          .message = message,
          .evidence = std::move(evidence)};
}

}  // namespace

TaskSpec StorageProbeTask(const ProbeTaskOptions& options,
                          std::shared_ptr<prometheus::Registry> registry) {
  TaskSpec t;
  t.name = "storage-probe:" + options.path;
  t.checks = {kStorageProbe, storage::kLatencyHigh, storage::kDataWrong};
  auto& histograms =
      prometheus::BuildHistogram()
          .Name("tocsin_storage_probe_duration_seconds")
          .Help("Latency of the storage probe's operations on each configured shared path.")
          .Register(*registry);
  t.interval = options.interval;
  t.timeout = options.timeout;
  // Runs of one task never overlap: the count needs no lock.
  auto whole_run_timeouts = std::make_shared<int>(0);
  t.run = [options, registry, &histograms, whole_run_timeouts]() -> Result<TaskOutput> {
    // bench storage bounds each operation itself (--op-timeout) and reports a hang as
    // storage.timeout within about a second more; the process is bounded on top of that.
    double budget_s = options.timeout.count() / 1000.0;
    double op_timeout_s = std::max(0.2, budget_s * 0.6);
    // clang-format off
    std::vector<std::string> argv = {
        options.self_exe, "bench", "storage", "--path", options.path,
        "--size", "4K", "--block", "4K", "-j", "1",
        "--phase", "write", "--phase", "read", "--phase", "fsync", "--phase", "meta",
        "--fsync-ops", "1", "--files", "1",
        "--op-timeout", std::to_string(op_timeout_s),
        "--timeout", std::to_string(op_timeout_s * 6),
        "--straggler-ratio", "0", "-o", "json"};
    // clang-format on
    if (options.max_fsync_ms > 0) {
      argv.insert(argv.end(), {"--max-fsync-p99-ms", std::to_string(options.max_fsync_ms)});
    }
    if (options.max_meta_ms > 0) {
      argv.insert(argv.end(), {"--max-meta-p99-ms", std::to_string(options.max_meta_ms)});
    }
    sys::ProcessOptions po;
    po.timeout = std::chrono::milliseconds(static_cast<int64_t>(budget_s * 900));
    po.max_output = 4 << 20;
    auto proc = sys::RunProcess(argv, po);
    TaskOutput out;
    Families fam;
    auto failed = [&](Finding f) {
      // The filesystem did not answer a 4 KiB probe in time: that is known, and it is a fault
      // of the storage (never "unknown", which pages only after TocsinChecksUnknown's 10 minutes).
      // What the run could not measure stays unknown.
      out.findings.push_back(std::move(f));
      for (const char* check : {storage::kLatencyHigh, storage::kDataWrong}) {
        out.findings.push_back(UnknownFinding(check, options.path, options.path,
                                              Status::Timeout("the storage probe did not finish")));
      }
      fam.Family("tocsin_storage_probe_success", "1 when the last probe of the path succeeded.",
                 prometheus::MetricType::Gauge)
          .Add({{"path", options.path}}, 0);
      out.families = fam.Take();
      return out;
    };
    if (!proc.ok()) {
      if (proc.status().code() != StatusCode::kTimeout) return proc.status();
      double limit_s = po.timeout.count() / 1000.0;
      // The whole run includes starting the child, which a starved node can delay: once is
      // unknown, twice in a row is the path's fault. (An operation over --op-timeout, below, is
      // the filesystem's own answer and fails the probe at once.)
      if (++*whole_run_timeouts < 2) {
        return Status::Timeout(fmt::format(
            "{}: the storage probe did not finish within {:.1f} s (once: unknown; twice in a row "
            "fails storage.probe)",
            options.path, limit_s));
      }
      return failed(ProbeFinding(
          options.path,
          fmt::format("the storage probe (a 4 KiB write, read, write+fsync, create, stat and "
                      "unlink) did not finish within {:.1f} s, twice in a row",
                      limit_s),
          {{"result", "timeout"}, {"timeout_s", limit_s}, {"op_timeout_s", op_timeout_s}}));
    }
    *whole_run_timeouts = 0;
    auto report = nlohmann::json::parse(proc->out, nullptr, false);
    if (!report.is_object() || !report.contains("findings")) {
      // A usage error (path missing, not writable): bench storage says why on stderr.
      std::string why(Trim(proc->err));
      out.findings.push_back(ProbeFinding(options.path,
                                          "cannot probe: " + (why.empty() ? "no report" : why),
                                          {{"exit_code", proc->exit_code}}));
      fam.Family("tocsin_storage_probe_success", "1 when the last probe of the path succeeded.",
                 prometheus::MetricType::Gauge)
          .Add({{"path", options.path}}, 0);
      out.families = fam.Take();
      return out;
    }
    bool ok = true;
    for (const auto& f : report["findings"]) {
      std::string check = f.value("check", "");
      if (check == storage::kTimeout) {
        // One operation did not return within --op-timeout: the mount stopped answering.
        nlohmann::json evidence = f.value("evidence", nlohmann::json::object());
        if (!evidence.is_object()) evidence = nlohmann::json::object();
        evidence["result"] = "timeout";
        return failed(ProbeFinding(options.path, f.value("message", "did not answer"),
                                   std::move(evidence)));
      }
      Finding finding;
      finding.check = check == storage::kRankFailed ? kStorageProbe : check;
      finding.severity = ParseSeverity(f.value("severity", "error")).value_or(Severity::kError);
      finding.subject = options.path;
      finding.message = f.value("message", "");
      finding.evidence = f.value("evidence", nlohmann::json::object());
      if (finding.severity >= Severity::kWarning) ok = false;
      out.findings.push_back(std::move(finding));
    }
    const nlohmann::json& inventory = report["inventory"];
    if (inventory.is_object() && inventory.contains("phases")) {
      for (const auto& p : inventory["phases"]) {
        const char* op = OpName(p.value("phase", ""));
        const auto& lat = p.value("latency", nlohmann::json::object());
        uint64_t count = lat.value("count", uint64_t{0});
        if (!op || count == 0) continue;
        auto& h = histograms.Add({{"path", options.path}, {"op", op}},
                                 prometheus::Histogram::BucketBoundaries{
                                     0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                     0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10});
        // One operation of each kind per run: its latency is the sample (mean = max).
        double seconds = lat.value("mean_us", 0.0) / 1e6;
        for (uint64_t i = 0; i < count; ++i) h.Observe(seconds);
      }
    }
    fam.Family("tocsin_storage_probe_success", "1 when the last probe of the path succeeded.",
               prometheus::MetricType::Gauge)
        .Add({{"path", options.path}}, ok ? 1 : 0);
    out.families = fam.Take();
    return out;
  };
  return t;
}

}  // namespace tocsin::agent

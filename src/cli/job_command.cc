#include "cli/job_command.h"

#include <iostream>
#include <memory>

#include "base/report.h"
#include "cli/daemon_flags.h"
#include "cli/report_flags.h"
#include "jobview/job_view.h"
#include "jobview/prometheus.h"
#include "jobview/svg.h"
#include "sys/env.h"
#include "sys/write_file.h"

namespace tocsin::cli {
namespace {

struct JobFlags {
  ReportFlags report;
  std::string job;
  std::string prometheus;
  std::string since = "1h";
  std::string until;
  std::string step;
  std::string timeout = "10s";
  std::string plot;
  std::string token_file, ca_file;
  std::string source = "auto";
};

int RunJob(const JobFlags& f) {
  auto job = jobview::ParseJobRef(f.job);
  if (!job.ok()) return UsageError(job.status().message());
  jobview::JobOptions options;
  options.job = *job;
  options.until = Clock::now();
  if (!f.until.empty()) {
    auto until = ParseRfc3339(f.until);
    if (!until) return UsageError("--until: not an RFC 3339 time: \"" + f.until + "\"");
    options.until = *until;
  }
  std::chrono::milliseconds since{}, timeout{}, step{};
  if (Status st = ParseDurationFlag("--since", f.since, since); !st.ok()) {
    return UsageError(st.message());
  }
  if (since < std::chrono::minutes(5)) return UsageError("--since: at least 5m");
  options.since = std::chrono::duration_cast<std::chrono::seconds>(since);
  if (!f.step.empty()) {
    if (Status st = ParseDurationFlag("--step", f.step, step); !st.ok()) {
      return UsageError(st.message());
    }
    if (step < std::chrono::seconds(1) || options.since / step > 11000) {
      return UsageError("--step: from 1s, and at most 11000 steps in --since");
    }
    options.step = std::chrono::duration_cast<std::chrono::seconds>(step);
  }
  if (Status st = ParseDurationFlag("--timeout", f.timeout, timeout); !st.ok()) {
    return UsageError(st.message());
  }
  using Source = jobview::JobOptions::Source;
  if (f.source == "records") {
    options.source = Source::kRecords;
  } else if (f.source == "expressions") {
    options.source = Source::kExpressions;
  } else if (f.source != "auto") {
    return UsageError("--source: auto, records or expressions, not \"" + f.source + "\"");
  }
  jobview::PrometheusOptions po;
  po.url = f.prometheus;
  po.timeout = timeout;
  po.token_file = f.token_file;
  if (!f.ca_file.empty()) {
    auto pem = ReadRegularFile(f.ca_file, 1 << 20);
    if (!pem.ok()) return UsageError("--ca-file " + pem.status().message());
    po.ca_pem = *pem;
  }
  auto fetch = jobview::PrometheusFetch(po);
  if (!fetch.ok()) return UsageError(fetch.status().message());
  options.series = !f.plot.empty();  // the plot's series: range queries of every node
  auto view = jobview::QueryJob(*fetch, options);
  if (!view.ok()) return UsageError(view.status().message());
  if (!f.plot.empty()) {
    if (Status st = WriteUserFile(f.plot, jobview::PlotSvg(*view), "--plot"); !st.ok()) {
      return UsageError(st.message());
    }
  }
  return f.report.Emit(jobview::JobReport(*view, f.prometheus, Clock::now()));
}

}  // namespace

Command AddJobCommand(CLI::App& parent) {
  auto flags = std::make_shared<JobFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "job",
      "A training job's view from Prometheus: per node of the job, GPU utilisation, RDMA and "
      "Ethernet rates, storage latency and NCCL transport side by side, then the verdicts "
      "(job.fabric.*, job.storage.*, job.network.*) with their onsets");
  cmd->add_option("job", flags->job, "NAMESPACE/NAME: the job_name of the agent's tocsin_pod_info")
      ->required();
  cmd->add_option("--prometheus", flags->prometheus,
                  "Prometheus's URL (http(s)://host:port[/prefix]) that scrapes the agents")
      ->required();
  cmd->add_option("--since", flags->since, "The window before --until: 5m to 24h")
      ->capture_default_str();
  cmd->add_option("--until", flags->until, "The window's end, RFC 3339 (default: now)");
  cmd->add_option("--step", flags->step,
                  "Resolution (default: the window / 720, rounded up to 15 s, at least 15 s)");
  cmd->add_option("--timeout", flags->timeout, "Bound of each request to Prometheus")
      ->capture_default_str();
  cmd->add_option("--plot", flags->plot,
                  "Write an SVG of GPU utilisation, RDMA and Ethernet rates and storage p99 over "
                  "time, one line per node, each verdict shaded");
  cmd->add_option("--source", flags->source,
                  "auto: the tocsin-job rules' recorded series when they cover every node of the "
                  "job over the window, else their expressions over the agents' series; records; "
                  "expressions")
      ->capture_default_str();
  cmd->add_option("--bearer-token-file", flags->token_file,
                  "A file holding the bearer token Prometheus (or its proxy) wants; re-read as it "
                  "rotates");
  cmd->add_option("--ca-file", flags->ca_file,
                  "PEM bundle that signs Prometheus's certificate (default: the system store)");
  flags->report.AddTo(cmd);
  return {cmd, [flags] { return RunJob(*flags); }};
}

}  // namespace tocsin::cli

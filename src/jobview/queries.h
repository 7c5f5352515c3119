#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "base/finding.h"
#include "base/status.h"

namespace tocsin::jobview {

// A training job as the agent's attribution names it: tocsin_pod_info{namespace, job_name}.
struct JobRef {
  std::string namespace_;
  std::string name;
  std::string ToString() const { return namespace_ + "/" + name; }
};

// "NAMESPACE/NAME": each part 1 to 253 bytes of [A-Za-z0-9._-] (Kubernetes names and label
// values), so that it goes into a PromQL string as it is.
Result<JobRef> ParseJobRef(std::string_view text);

// One recording rule of the group tocsin-job (deploy/agent/alerts.yaml): its name and its
// expression, which reads only the agent's own series (a test holds this table to the file).
struct Record {
  const char* name;
  const char* expr;
};

// One verdict: its check id, the alert of the same group, the alert's severity label and `for`,
// the finding's severity, and the alert's expression (over the records' names).
struct Verdict {
  const char* check;
  const char* alert;
  const char* alert_severity;
  std::chrono::seconds hold;
  Severity severity;
  const char* expr;
  int bit;  // its bit in the record tocsin:job_node_verdicts:bitmask
};

// The records, in the rules' order; the per-node ones (labels namespace, job_name, node) first.
std::span<const Record> Records();
const Record* FindRecord(std::string_view name);
std::span<const Verdict> Verdicts();

inline constexpr char kInfo[] = "tocsin:job_node:info";
inline constexpr char kGpuUtilization[] = "tocsin:job_node_gpu_utilization:avg";
inline constexpr char kRdmaRate[] = "tocsin:job_node_rdma_bytes_per_second";
inline constexpr char kEthernetRate[] = "tocsin:job_node_ethernet_bytes_per_second";
inline constexpr char kStorageP99[] = "tocsin:job_node_storage_probe_p99_seconds";
inline constexpr char kLustreWait[] = "tocsin:job_node_lustre_wait_seconds:max";
inline constexpr char kSocketProcesses[] = "tocsin:job_node_nccl_socket_processes:count";
inline constexpr char kProcessTransport[] = "tocsin:job_process_nccl_transport:info";
// The last record of the group: per node of a job, the sum of the bits of the verdicts whose
// condition holds, plus kInputsMissingBit where the GPU, RDMA or Ethernet record is missing
// (0: none). Dense (a series wherever tocsin:job_node:info is), so that its coverage says the
// verdicts were recorded, and one range query finds every episode.
inline constexpr char kVerdictBitmask[] = "tocsin:job_node_verdicts:bitmask";
inline constexpr int kInputsMissingBit = 8;

// The bitmask record's expression, composed from Verdicts() (a test holds the file to it).
std::string VerdictBitmaskExpr();

// `expr` with every record name replaced by its expression in parentheses (so that a query
// needs no recorded history: backfilled data, a Prometheus without the rules).
std::string ExpandRecords(std::string_view expr);

// `expr` narrowed to one job: each tocsin_pod_info becomes
// tocsin_pod_info{namespace="NS", job_name="NAME"} (every record starts from it).
std::string ForJob(std::string_view expr, const JobRef& job);

// `expr` over the recorded series instead: each record name becomes
// NAME{namespace="NS", job_name="NAME"} (every record carries both labels).
std::string ForJobRecorded(std::string_view expr, const JobRef& job);

}  // namespace tocsin::jobview

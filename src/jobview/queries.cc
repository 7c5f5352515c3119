#include "jobview/queries.h"

#include <cctype>

#include "jobview/catalog.h"

namespace tocsin::jobview {
namespace {

// The group tocsin-job of deploy/agent/alerts.yaml, expression for expression
// (queries_test.cc reads the file and compares).
constexpr Record kRecords[] = {
    {kInfo, "max by (namespace, job_name, node) (tocsin_pod_info)"},
    {kGpuUtilization,
     "avg by (namespace, job_name, node) (tocsin_gpu_utilization_ratio * on (node, "
     "gpu) group_left (namespace, job_name) max by (node, gpu, namespace, job_name) "
     "(label_replace(tocsin_pod_device_info{device_kind=\"gpu\"}, \"gpu\", \"$1\", "
     "\"device\", \"(.+)\") * on (namespace, pod) group_left (job_name) max by "
     "(namespace, pod, job_name) (tocsin_pod_info)))"},
    {kRdmaRate,
     "max by (namespace, job_name, node) (tocsin_pod_info) * on (node) group_left "
     "max by (node) (tocsin_fabric_rdma_bytes_per_second)"},
    {kEthernetRate,
     "max by (namespace, job_name, node) (tocsin_pod_info) * on (node) group_left "
     "max by (node) (tocsin_fabric_ethernet_bytes_per_second)"},
    {kStorageP99,
     "max by (namespace, job_name, node) (tocsin_pod_info) * on (node) group_left "
     "max by (node) (histogram_quantile(0.99, sum by (node, path, le) "
     "(rate(tocsin_storage_probe_duration_seconds_bucket{op=\"write_fsync\"}[5m]))))"},
    {kLustreWait,
     "max by (namespace, job_name, node) (tocsin_pod_info) * on (node) group_left "
     "max by (node) (tocsin_lustre_import_avg_wait_seconds)"},
    {kSocketProcesses,
     "count by (namespace, job_name, node) "
     "(tocsin_nccl_process_info{transport=\"Socket\"} * on (namespace, pod) group_left "
     "(job_name) max by (namespace, pod, job_name) (tocsin_pod_info))"},
    {kProcessTransport,
     "topk by (namespace, job_name, node) (12, max by (namespace, job_name, node, "
     "pod, pid, transport) (tocsin_nccl_process_info * on (namespace, pod) "
     "group_left (job_name) max by (namespace, pod, job_name) (tocsin_pod_info)))"},
};

constexpr Verdict kVerdicts[] = {
    {kFabricFallback, "TocsinJobFabricFallback", "critical", std::chrono::seconds(120),
     Severity::kError,
     "tocsin:job_node_nccl_socket_processes:count > 0 or "
     "(tocsin:job_node_gpu_utilization:avg < 0.5 and "
     "tocsin:job_node_ethernet_bytes_per_second > 1e8 and "
     "tocsin:job_node_rdma_bytes_per_second < 1e6 unless "
     "(tocsin:job_node_storage_probe_p99_seconds > 0.5 or "
     "tocsin:job_node_lustre_wait_seconds:max > 0.1))",
     1},
    {kStorageStall, "TocsinJobStorageStall", "warning", std::chrono::seconds(120),
     Severity::kWarning,
     "tocsin:job_node_gpu_utilization:avg < 0.5 and "
     "(tocsin:job_node_storage_probe_p99_seconds > 0.5 or "
     "tocsin:job_node_lustre_wait_seconds:max > 0.1)",
     2},
    {kNetworkStraggler, "TocsinJobNetworkStraggler", "warning", std::chrono::seconds(300),
     Severity::kWarning,
     "(tocsin:job_node_rdma_bytes_per_second + "
     "tocsin:job_node_ethernet_bytes_per_second) < on (namespace, job_name) "
     "group_left 0.5 * quantile by (namespace, job_name) (0.5, "
     "tocsin:job_node_rdma_bytes_per_second + "
     "tocsin:job_node_ethernet_bytes_per_second) and on (namespace, job_name) (count "
     "by (namespace, job_name) (tocsin:job_node:info) >= 3) and on (namespace, "
     "job_name) (quantile by (namespace, job_name) (0.5, "
     "tocsin:job_node_rdma_bytes_per_second + "
     "tocsin:job_node_ethernet_bytes_per_second) > 1e8) unless "
     "(tocsin:job_node_nccl_socket_processes:count > 0 or "
     "tocsin:job_node_rdma_bytes_per_second < 1e6 or "
     "tocsin:job_node_gpu_utilization:avg < 0.5 and "
     "(tocsin:job_node_storage_probe_p99_seconds > 0.5 or "
     "tocsin:job_node_lustre_wait_seconds:max > 0.1))",
     4},
};

// PromQL metric names: [a-zA-Z_:][a-zA-Z0-9_:]*.
bool NameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}

bool NameCharOk(std::string_view s, size_t i) { return i < s.size() && NameChar(s[i]); }

bool JobChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

}  // namespace

Result<JobRef> ParseJobRef(std::string_view text) {
  size_t slash = text.find('/');
  auto valid = [](std::string_view part) {
    if (part.empty() || part.size() > 253) return false;
    for (char c : part) {
      if (!JobChar(c)) return false;
    }
    return true;
  };
  if (slash == std::string_view::npos || !valid(text.substr(0, slash)) ||
      !valid(text.substr(slash + 1))) {
    return Status::InvalidArgument("job \"" + std::string(text.substr(0, 300)) +
                                   "\" is not NAMESPACE/NAME (letters, digits, '.', '_', '-')");
  }
  return JobRef{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
}

std::span<const Record> Records() { return kRecords; }

std::string VerdictBitmaskExpr() {
  // count by: one 1 per node whatever the condition's value (never NaN); `or` the info record
  // times 0: a 0 on every node of a job where the condition does not hold.
  std::string out;
  for (const Verdict& v : kVerdicts) {
    out += "(count by (namespace, job_name, node) (" + std::string(v.expr) + ") * 0 + " +
           std::to_string(v.bit) + " or " + kInfo + " * 0) + on (namespace, job_name, node) ";
  }
  // The inputs every verdict needs: a node of the job without one of them (its agent's task
  // down, or a rule failing: a GPU shared by two jobs makes that join many-to-many) sets 8.
  return out + "(" + kInfo + " * 0 + " + std::to_string(kInputsMissingBit) +
         " unless on (namespace, job_name, node) (" + kGpuUtilization +
         " and on (namespace, job_name, node) " + kRdmaRate +
         " and on (namespace, job_name, node) " + kEthernetRate + ") or " + kInfo + " * 0)";
}

std::span<const Verdict> Verdicts() { return kVerdicts; }

const Record* FindRecord(std::string_view name) {
  for (const auto& r : kRecords) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

// `expr` with each whole word that names a record replaced by `with(record)`.
template <typename With>
std::string RewriteRecords(std::string_view expr, With with) {
  std::string out;
  for (size_t i = 0; i < expr.size();) {
    if (NameChar(expr[i]) && (i == 0 || !NameChar(expr[i - 1]))) {
      size_t end = i;
      while (NameCharOk(expr, end)) ++end;
      std::string_view word = expr.substr(i, end - i);
      const Record* r = FindRecord(word);
      out += r != nullptr ? with(*r) : std::string(word);
      i = end;
    } else {
      out += expr[i++];
    }
  }
  return out;
}

std::string ExpandRecords(std::string_view expr) {
  return RewriteRecords(expr, [](const Record& r) {
    std::string out = "(";  // not "(" + std::string: a GCC 12 -Wrestrict false positive
    out += r.expr;
    out += ')';
    return out;
  });
}

std::string ForJob(std::string_view expr, const JobRef& job) {
  static constexpr std::string_view kPodInfo = "tocsin_pod_info";
  std::string selector = std::string(kPodInfo) + "{namespace=\"" + job.namespace_ +
                         "\", job_name=\"" + job.name + "\"}";
  std::string out;
  for (size_t i = 0; i < expr.size();) {
    if (expr.substr(i).starts_with(kPodInfo) && (i == 0 || !NameChar(expr[i - 1])) &&
        !NameCharOk(expr, i + kPodInfo.size())) {
      out += selector;
      i += kPodInfo.size();
    } else {
      out += expr[i++];
    }
  }
  return out;
}

std::string ForJobRecorded(std::string_view expr, const JobRef& job) {
  // Each record read as max by its own labels: the same series from two Prometheus replicas
  // (Thanos without deduplication, an HA pair remote-writing) counts once.
  std::string matchers = "{namespace=\"" + job.namespace_ + "\", job_name=\"" + job.name + "\"}";
  return RewriteRecords(expr, [&](const Record& r) {
    std::string by = r.name == std::string_view(kProcessTransport)
                         ? "namespace, job_name, node, pod, pid, transport"
                         : "namespace, job_name, node";
    return "max by (" + by + ") (" + r.name + matchers + ")";
  });
}

}  // namespace tocsin::jobview

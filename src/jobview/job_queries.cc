#include "jobview/job_queries.h"

#include <fmt/format.h>

#include <cctype>
#include <utility>

namespace tocsin::jobview {
namespace {

constexpr std::string_view kByNode = "max by (namespace, job_name, node) ";

}  // namespace

JobQueries::JobQueries(JobRef job, bool recorded, int64_t step)
    : job_(std::move(job)), recorded_(recorded), step_(step) {}

std::string JobQueries::Of(std::string_view record) const {
  if (recorded_) {
    return std::string(record) + "{namespace=\"" + job_.namespace_ + "\", job_name=\"" + job_.name +
           "\"}";
  }
  return fmt::format("({})", ForJob(ExpandRecords(record), job_));  // "(" + ...: GCC 12 warns
}

std::string JobQueries::OverTime(std::string_view record, std::string_view fn,
                                 int64_t seconds) const {
  // A subquery over the expression at the view's step: what its range query would have seen.
  std::string range =
      recorded_ ? fmt::format("[{}s]", seconds) : fmt::format("[{}s:{}s]", seconds, step_);
  return fmt::format("{}_over_time({}{})", fn, Of(record), range);
}

std::string JobQueries::PodInfoGrid(int64_t lookback) const {
  return fmt::format(
      "{}(count_over_time(tocsin_pod_info{{namespace=\"{}\", job_name=\"{}\"}}[{}s]))", kByNode,
      job_.namespace_, job_.name, lookback);
}

std::string JobQueries::BitmaskGrid(int64_t lookback) const {
  return fmt::format("{}(max_over_time({}{{namespace=\"{}\", job_name=\"{}\"}}[{}s]))", kByNode,
                     kVerdictBitmask, job_.namespace_, job_.name, lookback);
}

std::string JobQueries::Reduce(std::string_view record, std::string_view fn,
                               int64_t seconds) const {
  return std::string(kByNode) + "(" + OverTime(record, fn, seconds) + ")";
}

std::string JobQueries::Transports(int64_t seconds) const {
  return "max by (namespace, job_name, node, pod, pid, transport) (" +
         OverTime(kProcessTransport, "max", seconds) + ")";
}

std::string JobQueries::Bitmask(const std::vector<std::string>& nodes) const {
  std::string sel = fmt::format("{}{{namespace=\"{}\", job_name=\"{}\"", kVerdictBitmask,
                                job_.namespace_, job_.name);
  if (!nodes.empty()) sel += ", node=~\"" + NodeRegex(nodes) + "\"";
  sel += "}";
  // Two replicas that disagree (1 on one, 4 on the other) keep both bits: each bit is the max of
  // its own over the replicas, not the max of the sums.
  std::string out;
  for (int bit = 1; bit <= kInputsMissingBit; bit *= 2) {
    if (!out.empty()) out += " + ";
    out += fmt::format("{} * {}(floor({} / {}) % 2)", bit, kByNode, sel, bit);
  }
  return "(" + out + ") > 0";
}

std::string JobQueries::Condition(const Verdict& v) const {
  return ForJob(ExpandRecords(v.expr), job_);
}

std::string JobQueries::Series(std::string_view record) const {
  return recorded_ ? std::string(kByNode) + "(" + Of(record) + ")"
                   : ForJob(ExpandRecords(record), job_);
}

bool SafeNodeName(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') {
      return false;
    }
  }
  return true;
}

std::string NodeRegex(const std::vector<std::string>& nodes) {
  std::string out;
  for (const std::string& n : nodes) {
    if (!out.empty()) out += '|';
    for (char c : n) {
      if (c == '.') out += "\\\\";  // RE2's backslash, itself escaped in the PromQL string
      out += c;
    }
  }
  return out;
}

}  // namespace tocsin::jobview

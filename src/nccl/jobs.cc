#include "nccl/jobs.h"

#include <fmt/format.h>

#include <map>
#include <numeric>

#include "nccl/render.h"

namespace tocsin::nccl {
namespace {

struct UnionFind {
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  size_t Find(size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
  void Unite(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the first process names the job
  }
  std::vector<size_t> parent;
};

std::string CommKey(const Rank& r) { return r.comm_id + "/" + std::to_string(r.nranks); }

}  // namespace

std::vector<std::set<ProcessKey>> JobsOf(const Analyzer& analyzer) {
  std::vector<const Process*> procs;
  std::vector<ProcessKey> keys;
  for (const auto& [key, p] : analyzer.processes()) {
    procs.push_back(&p);
    keys.push_back(key);
  }
  // A communicator's rank is held by one process: two holders mean two jobs that happen to log
  // the same commId (copied logs, fixtures): that communicator is then one per input.
  std::map<std::string, std::map<int, size_t>> holder;  // comm -> rank -> process
  std::set<std::string> ambiguous;
  for (size_t i = 0; i < procs.size(); ++i) {
    for (const auto& r : procs[i]->ranks) {
      if (r.comm_id.empty()) continue;
      auto [it, fresh] = holder[CommKey(r)].emplace(r.rank, i);
      if (!fresh && it->second != i) ambiguous.insert(CommKey(r));
    }
  }
  UnionFind uf(procs.size());
  std::map<std::string, size_t> first;  // communicator -> its first process
  std::vector<bool> identified(procs.size(), false);
  for (size_t i = 0; i < procs.size(); ++i) {
    for (const auto& r : procs[i]->ranks) {
      if (r.comm_id.empty()) continue;
      std::string comm = CommKey(r);
      if (ambiguous.count(comm)) comm += "@" + procs[i]->source;
      auto [it, fresh] = first.emplace(comm, i);
      if (!fresh) uf.Unite(it->second, i);
      identified[i] = true;
    }
  }
  std::map<std::string, std::set<size_t>> jobs_of_input;  // input -> its identified jobs
  for (size_t i = 0; i < procs.size(); ++i) {
    if (identified[i]) jobs_of_input[procs[i]->source].insert(uf.Find(i));
  }
  std::optional<size_t> unidentified;  // the processes no job could be found for
  for (size_t i = 0; i < procs.size(); ++i) {
    if (identified[i]) continue;
    const auto& in = jobs_of_input[procs[i]->source];
    if (in.size() == 1) {
      uf.Unite(*in.begin(), i);
    } else if (unidentified) {
      uf.Unite(*unidentified, i);
    } else {
      unidentified = i;
    }
  }
  std::map<size_t, std::set<ProcessKey>> by_root;
  for (size_t i = 0; i < procs.size(); ++i) by_root[uf.Find(i)].insert(keys[i]);
  std::vector<std::set<ProcessKey>> jobs;
  for (auto& [root, members] : by_root) jobs.push_back(std::move(members));
  return jobs;
}

void FillReport(const Analyzer& analyzer, Report& report) {
  std::vector<std::set<ProcessKey>> jobs = JobsOf(analyzer);
  report.inventory = analyzer.Inventory();
  report.tables = Tables(analyzer);
  if (jobs.size() <= 1) {
    report.findings = analyzer.Findings();
    SortFindings(report.findings);
    report.inventory["jobs"] = nlohmann::json::array(
        {{{"job", "job"}, {"processes", analyzer.processes().size()}}});
    return;
  }
  std::map<ProcessKey, std::string> label;
  nlohmann::json jobs_json = nlohmann::json::array();
  Table jobs_table{"NCCL JOBS", {"JOB", "PROCESSES", "HOSTS", "COMMUNICATORS"}, {}, {}};
  for (size_t j = 0; j < jobs.size(); ++j) {
    std::string name = fmt::format("job {}", j + 1);
    // The inputs' lines that belong to no process, and nccl-tests runs, go with the first job.
    Analyzer part = analyzer.Part(jobs[j], j == 0);
    std::set<std::string> hosts, comms;
    for (const auto& [key, p] : part.processes()) {
      label[key] = name;
      hosts.insert(p.host);
      for (const auto& r : p.ranks) {
        if (!r.comm_id.empty()) comms.insert(fmt::format("{} ({} ranks)", r.comm_id, r.nranks));
      }
    }
    for (Finding f : part.Findings()) {
      if (f.subject == "job") f.subject = name;
      if (f.evidence.is_object()) f.evidence["job"] = name;
      report.findings.push_back(std::move(f));
    }
    jobs_json.push_back({{"job", name},
                         {"processes", part.processes().size()},
                         {"hosts", hosts},
                         {"communicators", comms},
                         {"summary", part.Inventory()["summary"]}});
    std::vector<std::string> comm_list(comms.begin(), comms.end());
    jobs_table.rows.push_back({name, std::to_string(part.processes().size()),
                               std::to_string(hosts.size()),
                               comm_list.empty() ? "-" : comm_list.front() +
                                   (comm_list.size() > 1
                                        ? fmt::format(" (+{})", comm_list.size() - 1)
                                        : "")});
  }
  SortFindings(report.findings);
  report.inventory["jobs"] = jobs_json;
  auto& procs = report.inventory["processes"];
  size_t i = 0;
  for (const auto& [key, p] : analyzer.processes()) procs[i++]["job"] = label[key];
  Table& table = report.tables.front();  // NCCL PROCESSES, in the same order
  table.columns.insert(table.columns.begin(), "JOB");
  i = 0;
  for (const auto& [key, p] : analyzer.processes()) {
    auto& row = table.rows[i++];
    row.insert(row.begin(), label[key]);
  }
  report.tables.insert(report.tables.begin(), jobs_table);
}

}  // namespace tocsin::nccl

#include "nccl/jobs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "base/strings.h"

namespace tocsin::nccl {
namespace {

const std::string kLogs = std::string(TOCSIN_SOURCE_DIR) + "/src/nccl/testdata/";

// A fixture's lines, with its commId replaced (the fixtures share one made-up commId).
std::vector<std::string> Log(const std::string& name, const std::string& comm_id = "") {
  std::ifstream in(kLogs + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  std::vector<std::string> out;
  for (auto l : Split(text, '\n')) {
    std::string line(l);
    size_t at = line.find("commId 0x");
    if (at != std::string::npos && !comm_id.empty()) line.replace(at + 7, 18, comm_id);
    out.push_back(line);
  }
  return out;
}

void Feed(Analyzer& a, const std::string& name, const std::vector<std::string>& lines) {
  a.BeginInput(name);
  for (const auto& l : lines) a.FeedLine(l);
  a.EndInput(0);
}

std::vector<std::string> Checks(const Report& r) {
  std::vector<std::string> out;
  for (const auto& f : r.findings) out.push_back(f.check + " " + f.subject);
  return out;
}

// An EFA job and a job with NCCL_IB_DISABLE=1 (sockets) given together: the sockets job is not
// "one of the 4 other processes of this job use RDMA", nor one communicator with the EFA job.
TEST(NcclJobsTest, TwoFilesOfTwoJobsAreTwoJobs) {
  Analyzer a(Options{});
  Feed(a, "efa.log", Log("efa-2.27.log", "0x1111111111111111"));
  Feed(a, "tcp.log", Log("ib-disable-2.27.log", "0x2222222222222222"));
  auto jobs = JobsOf(a);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].size() + jobs[1].size(), a.processes().size());
  Report r;
  FillReport(a, r);
  for (const auto& c : Checks(r)) {
    EXPECT_EQ(c.find("nccl.transport.mixed"), std::string::npos) << c;
    EXPECT_EQ(c.find("nccl.transport.socket"), std::string::npos) << c;
  }
  ASSERT_EQ(r.inventory["jobs"].size(), 2u);
  EXPECT_EQ(r.inventory["jobs"][0]["communicators"][0], "0x1111111111111111 (4 ranks)");
  for (const auto& p : r.inventory["processes"]) {
    EXPECT_EQ(p["job"], p["source"] == "efa.log" ? "job 1" : "job 2") << p.dump();
  }
  EXPECT_EQ(r.tables[0].title, "NCCL JOBS");
  EXPECT_EQ(r.tables[1].columns[0], "JOB");
}

TEST(NcclJobsTest, OneStreamWithTwoJobsIsTwoJobs) {
  std::vector<std::string> efa = Log("efa-2.27.log", "0x1111111111111111");
  std::vector<std::string> tcp = Log("ib-disable-2.27.log", "0x2222222222222222");
  std::vector<std::string> both;
  for (size_t i = 0; i < std::max(efa.size(), tcp.size()); ++i) {
    if (i < efa.size()) both.push_back(efa[i]);
    if (i < tcp.size()) both.push_back(tcp[i]);
  }
  Analyzer a(Options{});
  Feed(a, "-", both);
  EXPECT_EQ(JobsOf(a).size(), 2u);
  Report r;
  FillReport(a, r);
  for (const auto& c : Checks(r)) EXPECT_EQ(c.find("nccl.transport."), std::string::npos) << c;
}

// The same commId in two files whose processes both hold its rank 0: two jobs (copied logs).
TEST(NcclJobsTest, ARankHeldTwiceIsTwoJobs) {
  Analyzer a(Options{});
  Feed(a, "a.log", Log("efa-2.27.log"));
  Feed(a, "b.log", Log("ib-disable-2.27.log"));
  EXPECT_EQ(JobsOf(a).size(), 2u);
}

// One job whose ranks log to a file each (a host per file here): one job, compared as one.
TEST(NcclJobsTest, OneJobInAFilePerHostIsOneJob) {
  std::vector<std::string> lines = Log("mixed-2.30-kubectl.log", "0x3333333333333333");
  std::vector<std::string> first, second;
  for (const auto& l : lines) {
    (l.find("train-worker-0") != std::string::npos ? first : second).push_back(l);
  }
  Analyzer a(Options{});
  Feed(a, "w0.log", first);
  Feed(a, "rest.log", second);
  ASSERT_EQ(JobsOf(a).size(), 1u);
  Report r;
  FillReport(a, r);
  Analyzer whole(Options{});
  Feed(whole, "all.log", lines);
  EXPECT_EQ(r.findings.size(), whole.Findings().size());
  EXPECT_EQ(r.tables[0].title, "NCCL PROCESSES");  // no JOB column for one job
}

// NCCL before 2.19 logs no commId: several such logs cannot be told apart and stay one job.
TEST(NcclJobsTest, LogsWithoutCommIdStayOneJob) {
  Analyzer a(Options{});
  Feed(a, "a.log", Log("ib-2.12.log"));
  Feed(a, "b.log", Log("socket-2.12.log"));
  EXPECT_EQ(JobsOf(a).size(), 1u);
}

}  // namespace
}  // namespace tocsin::nccl

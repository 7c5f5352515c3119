// `tocsin bench net --verdict-file`: every rank writes the canary's verdict, the termination
// message the controller decodes, whatever ended the run (a pass, a refusal, a usage error).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/verdict.h"
#include "bench_net_helpers.h"
#include "run_binary.h"
#include "testing/status_matchers.h"

namespace tocsin {
namespace {

using bench_net_test::Args;
using bench_net_test::ReadFile;
using nlohmann::json;
using testing::JsonRun;
using testing::RunBinary;
using testing::RunResult;
using testing::RunTocsinJson;

// The canary's verdict (--verdict-file): what the controller reads from the termination message.
TEST(BenchNetCliTest, EveryRankWritesADecodableVerdict) {
  std::string dir = testing::TempDir("verdict");
  std::string file = dir + "/termination-log";
  // An existing, longer file is replaced.
  ASSERT_EQ(RunBinary("sh", {"-c", "head -c 8000 /dev/zero > " + file}).exit_code, 0);
  JsonRun r = RunTocsinJson(Args({"--local", "2", "-t", "p2p", "-t", "allreduce", "-b", "1K", "-e",
                                  "64K", "-f", "8", "-n", "2", "-w", "1", "--verdict-file", file}),
                            {"TOCSIN_NODE_NAME=gpu-node-7"});
  ASSERT_EQ(r.exit_code, 0) << r.report.dump(1);
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    std::string text = ReadFile(rank == 0 ? file : file + ".1");
    EXPECT_LE(text.size(), bench::kMaxVerdictBytes);
    auto v = bench::DecodeVerdict(text);
    ASSERT_TRUE(v.ok()) << v.status().ToString() << "\n" << text;
    EXPECT_EQ(v->rank, rank);
    EXPECT_EQ(v->world, 2);
    EXPECT_EQ(v->exit, 0);
    EXPECT_EQ(v->transport, "tcp");
    EXPECT_EQ(v->rdma, std::optional<bool>(false));
    EXPECT_TRUE(v->findings.empty()) << text;
    std::vector<std::string> tests;
    for (const auto& t : v->tests) {
      tests.push_back(t.test);
      EXPECT_GT(t.busbw, 0) << t.test;
      EXPECT_EQ(t.bytes, 65536u) << t.test;
    }
    EXPECT_EQ(tests, (std::vector<std::string>{"allreduce", "p2p"}));
    ASSERT_EQ(v->ranks.size(), 2u) << text;
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(v->ranks[i].rank, i);
      EXPECT_FALSE(v->ranks[i].host.empty());
      EXPECT_EQ(v->ranks[i].node, "gpu-node-7");  // each local rank inherits the environment
    }
  }
  EXPECT_DOUBLE_EQ(
      bench::DecodeVerdict(ReadFile(file))->tests[0].busbw,
      r.report["inventory"]["tests"]["allreduce"]["avg_busbw_gbps"].get<double>());
  RunBinary("rm", {"-rf", dir});
}

TEST(BenchNetCliTest, ANodeNameThatIsNotOneIsDroppedAndCounted) {
  std::string dir = testing::TempDir("verdict");
  std::string file = dir + "/termination-log";
  JsonRun r = RunTocsinJson(
      Args({"--local", "2", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "--verdict-file", file}),
      {"TOCSIN_NODE_NAME=Not_A_Node\x1b[31m"});
  ASSERT_EQ(r.exit_code, 0) << r.report.dump(1);
  EXPECT_TRUE(r.report["inventory"]["ranks"][1]["node"].is_null()) << r.report.dump(1);
  EXPECT_EQ(r.report["inventory"]["ranks"][1]["node_dropped"], true);
  auto v = bench::DecodeVerdict(ReadFile(file));
  ASSERT_OK(v);
  ASSERT_EQ(v->ranks.size(), 2u);
  EXPECT_EQ(v->ranks[0].node, "");
  EXPECT_EQ(v->ranks[1].node, "");
  EXPECT_EQ(v->nodes_dropped, 2u);
  RunBinary("rm", {"-rf", dir});
}

TEST(BenchNetCliTest, ARefusalAndAUsageErrorWriteTheirVerdicts) {
  std::string dir = testing::TempDir("verdict");
  std::string file = dir + "/termination-log";
  RunResult r = RunBinary(TOCSIN_BINARY,
                          Args({"--local", "2", "--require", "rdma", "--verdict-file", file}),
                          {"TOCSIN_NODE_NAME=n0"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  {
    // Rank 0 refuses before it starts the other local ranks.
    std::string text = ReadFile(file);
    auto v = bench::DecodeVerdict(text);
    ASSERT_TRUE(v.ok()) << v.status().ToString() << "\n" << text;
    EXPECT_EQ(v->exit, 1);
    EXPECT_EQ(v->rdma, std::optional<bool>(false));
    EXPECT_TRUE(v->tests.empty());
    ASSERT_EQ(v->findings.size(), 1u) << text;
    EXPECT_EQ(v->findings[0].check, "net.transport.not-rdma");
    EXPECT_EQ(v->findings[0].severity, Severity::kError);
    ASSERT_EQ(v->ranks.size(), 1u) << "a refusing rank knows itself only";
    EXPECT_EQ(v->ranks[0].node, "n0");
  }
  RunResult bad = RunBinary(TOCSIN_BINARY, Args({"--local", "2", "-b", "lots", "--verdict-file",
                                                 file}));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  auto v = bench::DecodeVerdict(ReadFile(file));
  ASSERT_OK(v);
  EXPECT_EQ(v->exit, 2);
  EXPECT_NE(v->error.find("-b: not a size"), std::string::npos) << v->error;
  // A path that cannot be written is an input error, said on stderr.
  RunResult link = RunBinary("ln", {"-s", file, dir + "/link"});
  ASSERT_EQ(link.exit_code, 0);
  RunResult refused = RunBinary(TOCSIN_BINARY, Args({"--local", "1", "-b", "1K", "-e", "1K",
                                                     "--verdict-file", dir + "/link"}));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("--verdict-file " + dir + "/link"), std::string::npos)
      << refused.err;
  RunBinary("rm", {"-rf", dir});
}

}  // namespace
}  // namespace tocsin

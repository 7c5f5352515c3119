#include "bench/verdict.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::bench {
namespace {

Verdict Sample() {
  Verdict v;
  v.rank = 0;
  v.world = 2;
  v.exit = 1;
  v.transport = "fabric";
  v.provider = "verbs;ofi_rxm";
  v.rdma = true;
  v.tests = {{"p2p", 12.34, 12.34, 67108864}, {"allreduce", 20.5, 20.5, 1024}};
  v.ranks = {{0, "h0", "n0"}, {1, "h1", ""}};
  v.findings = {{"net.busbw.low", Severity::kError, "allreduce", "below \"20\" GB/s\n\xc3\xa9"}};
  v.nodes_dropped = 1;
  return v;
}

void ExpectSame(const Verdict& a, const Verdict& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world, b.world);
  EXPECT_EQ(a.exit, b.exit);
  EXPECT_EQ(a.transport, b.transport);
  EXPECT_EQ(a.provider, b.provider);
  EXPECT_EQ(a.rdma, b.rdma);
  ASSERT_EQ(a.tests.size(), b.tests.size());
  for (size_t i = 0; i < a.tests.size(); ++i) {
    EXPECT_EQ(a.tests[i].test, b.tests[i].test);
    EXPECT_EQ(a.tests[i].busbw, b.tests[i].busbw);
    EXPECT_EQ(a.tests[i].algbw, b.tests[i].algbw);
    EXPECT_EQ(a.tests[i].bytes, b.tests[i].bytes);
  }
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    EXPECT_EQ(a.ranks[i].rank, b.ranks[i].rank);
    EXPECT_EQ(a.ranks[i].host, b.ranks[i].host);
    EXPECT_EQ(a.ranks[i].node, b.ranks[i].node);
  }
  ASSERT_EQ(a.findings.size(), b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].check, b.findings[i].check);
    EXPECT_EQ(a.findings[i].severity, b.findings[i].severity);
    EXPECT_EQ(a.findings[i].subject, b.findings[i].subject);
    EXPECT_EQ(a.findings[i].message, b.findings[i].message);
  }
  EXPECT_EQ(a.trimmed, b.trimmed);
  EXPECT_EQ(a.nodes_dropped, b.nodes_dropped);
  EXPECT_EQ(a.error, b.error);
}

TEST(VerdictTest, RoundTrips) {
  Verdict v = Sample();
  std::string text = EncodeVerdict(v);
  EXPECT_EQ(text.rfind(R"({"v":1,"rank":0,"world":2,"exit":1,"transport":"fabric")", 0), 0u)
      << text;
  auto back = DecodeVerdict(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << text;
  ExpectSame(v, *back);
  EXPECT_EQ(EncodeVerdict(*back), text);
  // Undetermined RDMA is null; an error travels; a node left out is null.
  v.rdma.reset();
  v.error = "-b: not a size";
  back = DecodeVerdict(EncodeVerdict(v));
  ASSERT_OK(back);
  EXPECT_FALSE(back->rdma.has_value());
  EXPECT_EQ(back->error, "-b: not a size");
  EXPECT_NE(EncodeVerdict(v).find(R"("node":null)"), std::string::npos);
}

TEST(VerdictTest, FortyLongFindingsFitIn4096BytesAndTheTrimIsCounted) {
  Verdict v = Sample();
  v.world = 64;
  v.ranks.clear();
  for (int r = 0; r < 64; ++r) {
    v.ranks.push_back({r, "host-" + std::string(200, 'h') + std::to_string(r),
                       "node-" + std::to_string(r) + "." + std::string(60, 'n')});
  }
  v.findings.clear();
  for (int i = 0; i < 40; ++i) {
    v.findings.push_back({"net.rank.failed", i < 5 ? Severity::kCritical : Severity::kWarning,
                          "rank " + std::to_string(i) + " " + std::string(300, 's'),
                          std::to_string(i) + ": " + std::string(3000, 'm') + "\xc3\xa9"});
  }
  std::string text = EncodeVerdict(v);
  EXPECT_LE(text.size(), kMaxVerdictBytes);
  auto back = DecodeVerdict(text);
  ASSERT_OK(back);
  EXPECT_GT(back->trimmed, 8u);  // 8 findings over the cap alone
  ASSERT_FALSE(back->findings.empty());
  EXPECT_EQ(back->findings[0].severity, Severity::kCritical);  // the worst are kept
  EXPECT_EQ(back->findings[0].message.rfind("0: mmm", 0), 0u);
  EXPECT_LE(back->findings.size(), kMaxVerdictFindings);
  EXPECT_EQ(back->tests.size(), 2u) << "tests are the last to go";
  // Already trimmed: encoding again changes nothing.
  EXPECT_EQ(EncodeVerdict(*back), text);
  for (size_t cap : {2048u, 1024u, 512u}) {
    std::string small = EncodeVerdict(v, cap);
    EXPECT_LE(small.size(), cap) << small;
    EXPECT_TRUE(DecodeVerdict(small).ok());
  }
}

TEST(VerdictTest, TextsOverTheCapsAreCutOnCharacterBoundaries) {
  Verdict v = Sample();
  v.provider = std::string(63, 'p') + "\xc3\xa9";  // 65 bytes: cut before the é
  v.ranks[0].node = "Not_A_Node";
  std::string text = EncodeVerdict(v);
  auto back = DecodeVerdict(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << text;
  EXPECT_EQ(back->provider, std::string(63, 'p'));
  EXPECT_EQ(back->ranks[0].node, "");
  EXPECT_EQ(back->trimmed, 2u);
  // Numbers that JSON cannot hold are written as 0, never as null.
  v.tests[0].busbw = std::numeric_limits<double>::quiet_NaN();
  v.tests[0].algbw = -1;
  back = DecodeVerdict(EncodeVerdict(v));
  ASSERT_OK(back);
  EXPECT_EQ(back->tests[0].busbw, 0);
  EXPECT_EQ(back->tests[0].algbw, 0);
}

TEST(VerdictTest, HostileInputIsAnErrorNeverACrash) {
  const std::string ok = R"({"v":1,"rank":0,"world":2,"exit":0,"transport":"tcp")";
  auto with = [&](const std::string& rest) { return ok + rest + "}"; };
  struct Case {
    std::string text;
    std::string says;
  };
  std::string many_ranks = "[";
  for (int i = 0; i < 65; ++i) many_ranks += std::string(i ? "," : "") + R"({"rank":0,"host":"h"})";
  many_ranks += "]";
  for (const Case& c : std::vector<Case>{
           {"", "not JSON"},
           {"[]", "not a JSON object"},
           {"{\"v\":1", "not JSON"},
           {std::string(2000, '[') + std::string(2000, ']'), "not a JSON object"},
           {std::string(4097, ' '), "4097 bytes"},
           {R"({"v":2,"rank":0,"world":2,"exit":0,"transport":"tcp"})", "version 2"},
           {R"({"v":"1"})", "v is not an integer"},
           {R"({"v":1,"rank":2,"world":2,"exit":0,"transport":"tcp"})", "not below world"},
           {R"({"v":1,"rank":0,"world":2,"exit":-1,"transport":"tcp"})", "exit"},
           {R"({"v":1,"rank":0,"world":99999,"exit":0,"transport":"tcp"})", "world"},
           {R"({"v":1,"rank":0,"world":2,"exit":0,"transport":"ucx"})", "not tcp, fabric"},
           {with(R"(,"rdma":"yes")"), "rdma is not"},
           {with(R"(,"provider":7)"), "provider is not a string"},
           {with(R"(,"tests":{})"), "tests is not an array"},
           {with(R"(,"tests":[1])"), "not an object"},
           {with(R"(,"tests":[{"test":"p2p","busbw":-1,"algbw":1,"bytes":1}])"), "tests[0]: busbw"},
           {with(R"(,"tests":[{"test":"p2p","busbw":1e999,"algbw":1,"bytes":1}])"), "not JSON"},
           {with(R"(,"tests":[{"test":"p2p","busbw":1,"algbw":1,"bytes":-5}])"), "bytes"},
           {with(R"(,"tests":[{"test":"P 2","busbw":1,"algbw":1,"bytes":5}])"), "test name"},
           {with(R"(,"ranks":)" + many_ranks), "65 entries"},
           {with(R"(,"ranks":[{"rank":5,"host":"h"}])"), "ranks[0]: rank 5 is out of range"},
           {with(R"(,"ranks":[{"rank":1,"host":"h\u001b[31m"}])"), "unprintable"},
           {with(R"(,"ranks":[{"rank":1,"host":"h","node":"UPPER"}])"), "node name"},
           {with(R"(,"ranks":[{"rank":1,"host":"h","node":["n"]}])"), "node is not a string"},
           {with(R"(,"findings":[{"check":"x","severity":"fatal","subject":"","message":""}])"),
            "severity"},
           {with(R"(,"findings":[{"check":"a b","severity":"error","subject":"","message":""}])"),
            "check id"},
           {with(R"(,"findings":[{"check":"x","severity":"error","subject":"","message":")" +
                 std::string(1025, 'm') + "\"}]"),
            "message of 1025 bytes"},
           {with(R"(,"trimmed":-1)"), "trimmed is not a count"},
           {with(R"(,"error":{})"), "error is not a string"},
       }) {
    auto r = DecodeVerdict(c.text);
    ASSERT_FALSE(r.ok()) << c.text.substr(0, 200);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << c.says << " / " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("verdict: ", 0), 0u) << r.status().message();
  }
  // Unknown fields are ignored; absent lists are empty; null is "undetermined".
  auto r = DecodeVerdict(with(R"(,"future":{"x":[1,2]},"rdma":null,"ranks":null)"));
  ASSERT_OK(r);
  EXPECT_FALSE(r->rdma.has_value());
  EXPECT_TRUE(r->ranks.empty());
}

TEST(VerdictTest, OfAFinishedRunAndOfOneThatNeverStarted) {
  Report report;
  report.inventory = {
      {"transport", {{"kind", "fabric"}, {"provider", "tcp;ofi_rxm"}, {"rdma", false}}},
      {"tests",
       {{"allreduce",
         {{"avg_busbw_gbps", 3.0},
          {"rows",
           {{{"size", 1024}, {"algbw_gbps", 1.0}}, {{"size", 4096}, {"algbw_gbps", 3.0}}}}}}}},
      {"ranks",
       {{{"rank", 0}, {"host", "h0"}, {"node", "n0"}, {"node_dropped", false}},
        {{"rank", 1}, {"host", "h1"}, {"node", nullptr}, {"node_dropped", true}}}}};
  report.findings = {{"net.link.slow", Severity::kWarning, "pair", "slow", std::nullopt, {}},
                     {"net.busbw.low", Severity::kError, "allreduce", "low", std::nullopt, {}}};
  Verdict v = VerdictOf(report, 0, 2, 1, "fabric", {0, "self", "n0"});
  EXPECT_EQ(v.transport, "fabric");
  EXPECT_EQ(v.provider, "tcp;ofi_rxm");
  EXPECT_EQ(v.rdma, std::optional<bool>(false));
  ASSERT_EQ(v.tests.size(), 1u);
  EXPECT_EQ(v.tests[0].busbw, 3.0);
  EXPECT_EQ(v.tests[0].algbw, 2.0);
  EXPECT_EQ(v.tests[0].bytes, 4096u);
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[1].host, "h1");
  EXPECT_EQ(v.ranks[1].node, "");
  EXPECT_EQ(v.nodes_dropped, 1u);
  ASSERT_EQ(v.findings.size(), 2u);
  EXPECT_EQ(v.findings[0].check, "net.busbw.low");  // worst first
  // Refused before anything ran: what this rank knows about itself.
  Verdict none = VerdictOf(Report{}, 1, 2, 2, "tcp", {1, "self", "BAD NODE"});
  EXPECT_EQ(none.provider, "tcp");
  EXPECT_EQ(none.rdma, std::optional<bool>(false));
  ASSERT_EQ(none.ranks.size(), 1u);
  EXPECT_EQ(none.ranks[0].host, "self");
  EXPECT_EQ(none.ranks[0].node, "");
  Verdict fabric = VerdictOf(Report{}, -1, -1, 2, "fabric", {-1, "self", ""});
  EXPECT_FALSE(fabric.rdma.has_value());
  EXPECT_TRUE(fabric.ranks.empty());
  EXPECT_TRUE(DecodeVerdict(EncodeVerdict(fabric)).ok());
  // Whatever the flags said (that was the usage error), the verdict decodes.
  for (auto [rank, world, transport] :
       {std::tuple{5, 2, "tcp"}, std::tuple{9999, 99999, "ucx"}, std::tuple{-7, -1, ""}}) {
    Verdict bad = VerdictOf(Report{}, rank, world, 2, transport, {rank, "self", ""});
    auto back = DecodeVerdict(EncodeVerdict(bad));
    EXPECT_TRUE(back.ok()) << rank << " " << world << " " << back.status().ToString();
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(VerdictTest, TheFileIsReplacedNeverFollowedAndAFifoDoesNotBlock) {
  ::tocsin::testing::ScopedTempDir tmp("verdict");
  const std::string& dir = tmp.path();
  std::string file = dir + "/termination-log";
  { std::ofstream(file) << std::string(5000, 'x'); }
  ASSERT_OK(WriteVerdictFile(file, "{\"v\":1}"));
  EXPECT_EQ(ReadAll(file), "{\"v\":1}");
  std::string link = dir + "/link";
  ASSERT_EQ(symlink(file.c_str(), link.c_str()), 0);
  Status st = WriteVerdictFile(link, "{}");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--verdict-file " + link), std::string::npos) << st.ToString();
  EXPECT_EQ(ReadAll(file), "{\"v\":1}");
  std::string fifo = dir + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(WriteVerdictFile(fifo, "{}").ok());
  EXPECT_FALSE(WriteVerdictFile(dir + "/no/such", "{}").ok());
}

}  // namespace
}  // namespace tocsin::bench

#include "agent/conditions.h"

#include <gtest/gtest.h>

namespace tocsin::agent {
namespace {

using std::chrono::seconds;

const TimePoint kNow = FromUnixSeconds(1764460000);

TaskState Ran(std::string name, std::vector<std::string> checks, std::vector<Finding> findings,
              TimePoint at = kNow) {
  TaskState t;
  t.name = std::move(name);
  t.checks = std::move(checks);
  t.interval = seconds(15);
  t.timeout = seconds(5);
  t.outcome = Outcome::kOk;
  t.last_run = at;
  t.last_ok = at;
  t.runs = 1;
  auto out = std::make_shared<TaskOutput>();
  out->findings = std::move(findings);
  t.output = out;
  return t;
}

// The condition of `type`; a missing one fails the test (and reads as an empty condition, never
// a null pointer).
const NodeCondition* Find(const std::vector<NodeCondition>& cs, const std::string& type) {
  for (const auto& c : cs) {
    if (c.type == type) return &c;
  }
  ADD_FAILURE() << "no condition " << type;
  static const NodeCondition kMissing;
  return &kMissing;
}

TEST(ChecksTest, StatusPerCheck) {
  Finding down{"rdma.port.down", Severity::kError, "mlx5_2/1", "port is DOWN"};
  Finding unreadable =
      UnknownFinding("rdma.port.rate", "mlx5_0/1", "/sys/x/rate", Status::IoError("EIO"));
  TaskState hung;
  hung.name = "storage";
  hung.checks = {"lustre.import.state"};
  hung.outcome = Outcome::kTimeout;
  hung.error = "no answer within 10000 ms";
  auto checks = EvaluateChecks(
      {Ran("rdma", {"rdma.port.down", "rdma.port.rate", "rdma.port.errors"}, {down, unreadable}),
       hung});
  ASSERT_EQ(checks.size(), 4u);
  EXPECT_EQ(checks[0].check, "rdma.port.down");
  EXPECT_EQ(checks[0].value, 0);
  EXPECT_EQ(checks[0].why, "mlx5_2/1: port is DOWN");
  EXPECT_EQ(checks[1].value, -1);  // input unreadable: unknown, never ok
  EXPECT_EQ(checks[2].value, 1);
  EXPECT_EQ(checks[3].check, "lustre.import.state");
  EXPECT_EQ(checks[3].value, -1);
  EXPECT_EQ(checks[3].why, "timeout: no answer within 10000 ms");
}

TEST(ConditionsTest, HealthyNodeHasEveryConditionFalse) {
  auto cs = EvaluateConditions(
      {Ran("rdma", {"rdma.port.down"}, {}), Ran("storage", {"lustre.import.state"}, {})}, {}, kNow,
      {});
  ASSERT_EQ(cs.size(), 4u);
  for (const auto& c : cs) {
    EXPECT_EQ(c.status, "False") << c.type;
    EXPECT_EQ(c.last_transition, kNow);
  }
  EXPECT_EQ(Find(cs, kTocsinChecksStale)->reason, "ChecksFresh");
}

TEST(ConditionsTest, FindingSetsItsConditionAndOnsetIsKept) {
  Finding evicted{"lustre.import.state", Severity::kError, "testfs-OST0001", "EVICTED",
                  FromUnixSeconds(1764300010)};
  Finding warn{"rdma.port.errors", Severity::kWarning, "mlx5_3/1", "symbol errors"};
  auto first = EvaluateConditions({Ran("rdma", {"rdma.port.errors"}, {warn}),
                                   Ran("storage", {"lustre.import.state"}, {evicted})},
                                  {}, kNow, {});
  const NodeCondition* storage = Find(first, kSharedStorageDegraded);
  EXPECT_EQ(storage->status, "True");
  EXPECT_EQ(storage->reason, "LustreImportState");
  EXPECT_EQ(storage->message, "testfs-OST0001: EVICTED");
  EXPECT_EQ(storage->last_transition, FromUnixSeconds(1764300010));  // the finding's since
  // A warning is below the default condition severity (error).
  EXPECT_EQ(Find(first, kRdmaFabricDegraded)->status, "False");

  std::map<std::string, NodeCondition> previous;
  for (const auto& c : first) previous[c.type] = c;
  previous[kRdmaFabricDegraded].last_transition = FromUnixSeconds(1764000000);
  auto later =
      EvaluateConditions({Ran("rdma", {"rdma.port.errors"}, {warn}, kNow + seconds(30)),
                          Ran("storage", {"lustre.import.state"}, {evicted}, kNow + seconds(30))},
                         previous, kNow + seconds(30), {});
  EXPECT_EQ(Find(later, kRdmaFabricDegraded)->last_transition, FromUnixSeconds(1764000000));
  EXPECT_EQ(Find(later, kSharedStorageDegraded)->last_transition, FromUnixSeconds(1764300010));
}

TEST(ConditionsTest, UnknownChecksAreNeverHealthy) {
  TaskState hung;
  hung.name = "storage-probe:/mnt/lustre";
  hung.checks = {"storage.probe"};
  hung.interval = seconds(60);
  hung.timeout = seconds(20);
  hung.outcome = Outcome::kTimeout;
  hung.error = "/mnt/lustre: did not answer";
  hung.last_run = kNow;
  auto cs = EvaluateConditions({Ran("rdma", {"rdma.port.down"}, {}), hung}, {}, kNow, {});
  const NodeCondition* storage = Find(cs, kSharedStorageDegraded);
  EXPECT_EQ(storage->status, "Unknown");
  EXPECT_EQ(storage->reason, "ChecksUnknown");
  const NodeCondition* stale = Find(cs, kTocsinChecksStale);
  EXPECT_EQ(stale->status, "True");
  EXPECT_EQ(stale->reason, "ChecksTimedOut");
  EXPECT_NE(stale->message.find("storage-probe:/mnt/lustre timeout"), std::string::npos);
}

TEST(ConditionsTest, AnOldSuccessIsStale) {
  TaskState old = Ran("rdma", {"rdma.port.down"}, {}, kNow - seconds(600));
  auto cs = EvaluateConditions({old}, {}, kNow, {});
  const NodeCondition* stale = Find(cs, kTocsinChecksStale);
  EXPECT_EQ(stale->status, "True");
  EXPECT_NE(stale->message.find("rdma: no successful run since"), std::string::npos);
}

TEST(ConditionsTest, PatchHasTheConditionsInNodeProblemDetectorForm) {
  NodeCondition c{kRdmaFabricDegraded, "True", "RdmaPortDown", "mlx5_2/1: port is DOWN",
                  FromUnixSeconds(1764400000)};
  auto patch = ConditionsPatch({c}, kNow);
  EXPECT_EQ(patch.dump(),
            R"({"status":{"conditions":[{"lastHeartbeatTime":"2025-11-29T23:46:40Z",)"
            R"("lastTransitionTime":"2025-11-29T07:06:40Z","message":"mlx5_2/1: port is DOWN",)"
            R"("reason":"RdmaPortDown","status":"True","type":"RDMAFabricDegraded"}]}})");
}

TEST(ConditionsTest, ReasonsAreCamelCase) {
  EXPECT_EQ(ReasonFromCheck("rdma.port.link-layer"), "RdmaPortLinkLayer");
  EXPECT_EQ(ReasonFromCheck("node.fabric.idle-while-tcp-busy"), "NodeFabricIdleWhileTcpBusy");
  EXPECT_EQ(ConditionTypeFor("node.fabric.idle-while-tcp-busy"), kRdmaFabricDegraded);
  EXPECT_EQ(ConditionTypeFor("storage.probe"), kSharedStorageDegraded);
  EXPECT_EQ(ConditionTypeFor("gpu.count"), "");
}

}  // namespace
}  // namespace tocsin::agent

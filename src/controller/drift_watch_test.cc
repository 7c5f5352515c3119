#include "controller/drift_watch.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "drift/catalog.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::controller {
namespace {

// A side as the controller sees it: a device plugin whose ConfigMap names the RDMA resource, a
// network attachment, a job template.
k8s::Snapshot Side(const std::string& ns, const std::string& resource) {
  k8s::Snapshot s;
  k8s::Node n;
  n.name = "gpu-1";
  n.labels = {{"node.kubernetes.io/instance-type", "p5.48xlarge"}};
  n.allocatable = {{"rdma/" + resource, "63"}};
  s.nodes.push_back(n);
  k8s::DaemonSet ds;
  ds.ns = ns;
  ds.name = "rdma-shared-dp-ds";
  ds.images = {"ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.1"};
  ds.config_maps = {"rdma-devices"};
  s.daemonsets.push_back(ds);
  s.configmaps.push_back(
      {ns, "rdma-devices",
       {{"config.json", R"({"configList":[{"resourceName":")" + resource +
                            R"(","rdmaHcaMax":63,"selectors":{"vendors":["15b3"]}}]})"}}});
  k8s::NetworkAttachment nad;
  nad.ns = ns;
  nad.name = "rdma-net";
  nad.type = "macvlan";
  nad.mtu = "9000";
  s.networks.push_back(nad);
  k8s::Workload w{"Job", ns, "llm"};
  w.containers.push_back({});
  w.containers[0].env = {{"NCCL_IB_HCA", "mlx5"}};
  s.workloads.push_back(w);
  return s;
}

std::vector<std::string> Ids(const std::vector<Finding>& findings) {
  std::vector<std::string> ids;
  for (const auto& f : findings) ids.push_back(f.check + " " + f.subject);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<Finding> Judge(const DriftInputs& in, const k8s::Snapshot& live,
                           const std::vector<std::pair<std::string, std::string>>& unreadable = {},
                           const std::string& baseline_error = "", size_t max = 500,
                           size_t* dropped = nullptr) {
  size_t ignored = 0;
  return JudgeDrift(in, live, {"staging.json", "https://api"}, unreadable, baseline_error, {},
                    Clock::now(), max, dropped ? dropped : &ignored);
}

TEST(JudgeDriftTest, TheSameFabricIsNoFindingAndAChangedResourceNameIsAnError) {
  DriftInputs in{Side("staging", "hca_a"), {}, Clock::now()};
  EXPECT_TRUE(Judge(in, Side("prod", "hca_a")).empty());
  auto findings = Judge(in, Side("prod", "hca_b"));
  ASSERT_FALSE(findings.empty());
  for (const auto& f : findings) {
    EXPECT_EQ(f.check, drift::kRdmaResource) << f.subject;
    EXPECT_EQ(f.severity, Severity::kError);
  }
  EXPECT_EQ(findings[0].evidence["side_a"], "baseline");
  EXPECT_EQ(findings[0].evidence["source_b"], "https://api");
}

TEST(JudgeDriftTest, AKindTheLiveSideCannotReadIsComparedOnNeitherSideAndSaidSo) {
  DriftInputs in{Side("staging", "hca_a"), {}, Clock::now()};
  k8s::Snapshot live = Side("prod", "hca_a");
  live.networks.clear();  // a 403: not listed
  auto ids = Ids(Judge(in, live, {{"NetworkAttachmentDefinition", "forbidden"}}));
  EXPECT_EQ(ids, std::vector<std::string>{
                     "drift.input.unreadable live NetworkAttachmentDefinition"});
}

// A device plugin's ConfigMap whose GET failed (a 503, a 403 in one namespace) is not its pools
// gone: the ConfigMaps are compared on neither side, and that is said.
TEST(JudgeDriftTest, APluginConfigMapThatCannotBeReadIsNotDrift) {
  DriftInputs in{Side("staging", "hca_a"), {}, Clock::now()};
  k8s::Snapshot live = Side("prod", "hca_a");
  live.configmaps.clear();
  auto ids = Ids(Judge(in, live, {{"ConfigMap", "GET prod/rdma-devices: HTTP 503"}}));
  EXPECT_EQ(ids, std::vector<std::string>{"drift.input.unreadable live ConfigMap"});
}

TEST(JudgeDriftTest, ABaselineThatCannotBeReadAgainKeepsItsFindings) {
  DriftInputs in{Side("staging", "hca_a"), {}, Clock::now()};
  auto findings = Judge(in, Side("prod", "hca_b"), {}, "staging.json: No such file");
  auto ids = Ids(findings);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "drift.input.unreadable baseline"), ids.end());
  EXPECT_GT(std::count_if(findings.begin(), findings.end(),
                          [](const Finding& f) { return f.check == drift::kRdmaResource; }),
            0);
}

TEST(JudgeDriftTest, AcceptedDifferencesAreInfoUntilTheyExpire) {
  DriftInputs in{Side("staging", "hca_a"), {}, Clock::now()};
  in.accepted.push_back({"drift.rdma.*", "*", "renamed in CHG-1", Clock::now() + std::chrono::hours(1)});
  for (const auto& f : Judge(in, Side("prod", "hca_b"))) EXPECT_EQ(f.severity, Severity::kInfo);
  in.accepted[0].expires = Clock::now() - std::chrono::hours(1);
  for (const auto& f : Judge(in, Side("prod", "hca_b"))) EXPECT_EQ(f.severity, Severity::kError);
}

TEST(JudgeDriftTest, TheCapKeepsTheWorstAndWhatTheInputSays) {
  DriftInputs in{Side("staging", "hca_a"), {}, Clock::now()};
  k8s::Snapshot live = Side("prod", "hca_b");  // errors
  for (int i = 0; i < 50; ++i) {  // a hostile namespace: templates on one side only (info)
    live.workloads.push_back({"Job", "prod", "t" + std::to_string(i)});
  }
  size_t all = Judge(in, live).size();
  ASSERT_GT(all, 50u);
  size_t dropped = 0;
  auto kept = Judge(in, live, {{"CronJob", "forbidden"}}, "", 3, &dropped);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(dropped, all + 1 - 3);
  EXPECT_EQ(kept[0].check, drift::kInputUnreadable);
  EXPECT_EQ(kept[1].severity, Severity::kError);
  EXPECT_EQ(kept[2].severity, Severity::kError);
}

TEST(ReadDriftInputsTest, TheBaselineAndAcceptFileAreCheckedAndFiltered) {
  testing::ScopedTempDir tmp("drift-inputs");
  DriftOptions o;
  o.baseline = tmp.Path("missing.json");
  auto missing = ReadDriftInputs(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--drift-baseline"), std::string::npos);

  o.baseline = tmp.Write("empty.json", R"({"kind":"List","items":[]})");
  EXPECT_FALSE(ReadDriftInputs(o).ok());  // not a snapshot of anything drift compares

  std::string list = R"({"kind":"List","items":[
    {"kind":"Node","metadata":{"name":"n1"}},
    {"kind":"NetworkAttachmentDefinition","metadata":{"name":"a","namespace":"staging"},
     "spec":{"config":"{\"type\":\"macvlan\"}"}},
    {"kind":"NetworkAttachmentDefinition","metadata":{"name":"b","namespace":"other"},
     "spec":{"config":"{\"type\":\"macvlan\"}"}}]})";
  o.baseline = tmp.Write("staging.json", list);
  o.baseline_namespace = "staging";
  ASSERT_OK_AND_ASSIGN(DriftInputs in, ReadDriftInputs(o));
  EXPECT_EQ(in.baseline.nodes.size(), 1u);
  ASSERT_EQ(in.baseline.networks.size(), 1u);
  EXPECT_EQ(in.baseline.networks[0].name, "a");

  o.max_baseline_bytes = 16;  // capped: refused unread
  EXPECT_FALSE(ReadDriftInputs(o).ok());
  o.max_baseline_bytes = 1 << 20;

  o.accept = tmp.Write("accept.yaml", "- match: drift.node.*\n");  // no reason, no expiry
  auto bad = ReadDriftInputs(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--drift-accept"), std::string::npos);
  o.accept = tmp.Write("accept.yaml",
                       "- match: drift.node.*\n  reason: rollout\n  expires: 2099-01-01\n");
  ASSERT_OK_AND_ASSIGN(in, ReadDriftInputs(o));
  EXPECT_EQ(in.accepted.size(), 1u);
}

// A baseline cluster: each path answers its status and body; others 404.
class BaselineServer {
 public:
  explicit BaselineServer(std::map<std::string, std::pair<int, std::string>> answers)
      : answers_(std::move(answers)) {
    server_.Get(".*", [this](const httplib::Request& req, httplib::Response& res) {
      auto it = answers_.find(req.path);
      res.status = it == answers_.end() ? 404 : it->second.first;
      res.set_content(it == answers_.end() ? R"({"kind":"Status","message":"not found"})"
                                           : it->second.second,
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~BaselineServer() {
    server_.stop();
    thread_.join();
  }
  std::unique_ptr<k8s::ApiClient> Client() {
    k8s::ClusterAccess access;
    access.origin = "test";
    access.server = "http://127.0.0.1:" + std::to_string(port_);
    k8s::ClientOptions co;
    co.attempts = 1;
    auto client = k8s::ApiClient::Create(access, co);
    return client.ok() ? std::move(*client) : nullptr;
  }

 private:
  std::map<std::string, std::pair<int, std::string>> answers_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

constexpr char kNodes[] = R"({"kind":"NodeList","metadata":{},"items":[
  {"metadata":{"name":"gpu-1","labels":{"node.kubernetes.io/instance-type":"p5.48xlarge"}},
   "status":{"allocatable":{"rdma/hca_staging":"63"}}}]})";

TEST(ReadDriftInputsTest, ABaselineClusterIsListedAndWhatItCannotReadIsComparedOnNeitherSide) {
  BaselineServer staging({
      {"/api/v1/nodes", {200, kNodes}},
      {"/apis/apps/v1/daemonsets", {200, R"({"kind":"DaemonSetList","metadata":{},"items":[]})"}},
      {"/apis/k8s.cni.cncf.io/v1/network-attachment-definitions",
       {403, R"({"kind":"Status","message":"forbidden: cannot list"})"}},
  });
  auto client = staging.Client();
  ASSERT_NE(client, nullptr);
  DriftOptions o;
  o.baseline_cluster = k8s::KubeconfigOptions{"", "staging"};
  ASSERT_OK_AND_ASSIGN(DriftInputs in, ReadDriftInputs(o, client.get()));
  ASSERT_EQ(in.baseline.nodes.size(), 1u);
  ASSERT_EQ(in.unreadable.size(), 1u);
  EXPECT_EQ(in.unreadable[0].first, "NetworkAttachmentDefinition");

  // Live has a network attachment and production's resource name: the attachment is not
  // compared (the baseline's cannot be read), the resource name is, and the gap is said.
  k8s::Snapshot live = Side("prod", "hca_prod");
  live.daemonsets.clear();
  live.configmaps.clear();
  live.workloads.clear();
  std::vector<std::string> ids = Ids(Judge(in, live));
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "drift.input.empty daemonsets of A (baseline)",
                     "drift.input.empty daemonsets of B (live)",
                     "drift.input.unreadable baseline NetworkAttachmentDefinition",
                     "drift.rdma.resource class p5.48xlarge: rdma rdma/hca_prod",
                     "drift.rdma.resource class p5.48xlarge: rdma rdma/hca_staging"}));
}

TEST(ReadDriftInputsTest, ABaselineClusterWhoseNodesCannotBeListedIsNoBaseline) {
  BaselineServer down({{"/api/v1/nodes", {500, R"({"kind":"Status","message":"etcd down"})"}}});
  auto client = down.Client();
  ASSERT_NE(client, nullptr);
  DriftOptions o;
  o.baseline_cluster = k8s::KubeconfigOptions{"", "staging"};
  auto in = ReadDriftInputs(o, client.get());
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("--drift-context"), std::string::npos);
  EXPECT_NE(in.status().message().find("etcd down"), std::string::npos);
  EXPECT_EQ(BaselineSource(o), "context staging");
}

}  // namespace
}  // namespace tocsin::controller

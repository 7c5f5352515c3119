#include "canary/spec.h"

#include <gtest/gtest.h>

namespace tocsin::canary {
namespace {

using nlohmann::json;

CanaryConfig Config() {
  CanaryConfig c;
  c.image = "registry.example/tocsin:1";
  c.resources = {{"rdma/hca_shared_devices_a", "1"}};
  c.network = "rdma-net";
  c.priority_class = "tocsin-canary";
  c.env = {{"NCCL_IB_HCA", "mlx5"}};
  c.owner_name = "tocsin-canary";
  c.owner_uid = "uid-1";
  return c;
}

TEST(CanarySpec, AsksForTheFabricLikeATrainingJob) {
  RankPlan p{.round = "r1", .pair = 3, .rank = 1, .node = "gpu-7", .partner = "gpu-2",
             .why = "node", .coordinator_ip = "10.0.0.5"};
  json job = JobFor(Config(), p);
  EXPECT_EQ(job["metadata"]["name"], "tocsin-canary-r1-3-r1");
  EXPECT_EQ(job["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  const json& spec = job["spec"]["template"]["spec"];
  EXPECT_FALSE(spec.contains("nodeName"));
  EXPECT_FALSE(spec.contains("volumes"));  // no hostPath devices
  EXPECT_EQ(spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            "gpu-7");
  EXPECT_EQ(spec["priorityClassName"], "tocsin-canary");
  EXPECT_EQ(spec["automountServiceAccountToken"], false);
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["rdma/hca_shared_devices_a"], "1");
  EXPECT_EQ(c["resources"]["requests"]["rdma/hca_shared_devices_a"], "1");
  EXPECT_EQ(c["securityContext"]["capabilities"]["add"][0], "IPC_LOCK");
  EXPECT_EQ(c["securityContext"]["runAsUser"], 0);  // a capability works for root only
  EXPECT_FALSE(c["securityContext"].contains("privileged"));
  EXPECT_EQ(job["spec"]["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"],
            "rdma-net");
  std::string args = c["args"].dump();
  EXPECT_NE(args.find("\"--require\",\"rdma\""), std::string::npos) << args;
  EXPECT_NE(args.find("\"10.0.0.5:29500\""), std::string::npos) << args;
  EXPECT_NE(args.find("\"--verdict-file\",\"/dev/termination-log\""), std::string::npos);
  EXPECT_EQ(c["env"][0]["name"], "NCCL_IB_HCA");
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_GT(job["spec"]["activeDeadlineSeconds"].get<int>(), 0);
}

TEST(CanarySpec, RankZeroListensOnItsPodIpAndTcpClustersRequireNothing) {
  CanaryConfig c = Config();
  c.expect = "tcp";
  c.ipc_lock = false;
  json job = JobFor(c, RankPlan{.round = "r", .pair = 0, .rank = 0, .node = "n"});
  std::string args = job["spec"]["template"]["spec"]["containers"][0]["args"].dump();
  EXPECT_NE(args.find("$(POD_IP):29500"), std::string::npos);
  EXPECT_EQ(args.find("--require"), std::string::npos);
  EXPECT_FALSE(job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["capabilities"]
                   .contains("add"));
  EXPECT_EQ(job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonRoot"],
            true);
}

TEST(CanarySpec, AQueueIsAskedByKueuesLabel) {
  CanaryConfig c = Config();
  json plain = JobFor(c, RankPlan{.round = "r", .pair = 0, .rank = 0, .node = "n"});
  EXPECT_FALSE(plain["metadata"]["labels"].contains("kueue.x-k8s.io/queue-name"));
  c.queue = "gpu-canaries";
  json queued = JobFor(c, RankPlan{.round = "r", .pair = 0, .rank = 0, .node = "n"});
  EXPECT_EQ(queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"], "gpu-canaries");
}

TEST(CanarySpec, JobNamesFitALabelValue) {
  EXPECT_LE(JobName("zzzzzzzzzz", 9999, 1).size(), 63u);
}

TEST(CanaryReference, CopiesTheFabricEnvOfAPyTorchJobsWorkers) {
  json o = json::parse(R"({"kind":"PyTorchJob","spec":{"pytorchReplicaSpecs":{"Worker":{"template":
    {"spec":{"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists"}],"containers":[{"env":[
      {"name":"NCCL_IB_HCA","value":"mlx5_0"},{"name":"FI_PROVIDER","value":"verbs"},
      {"name":"UCX_TLS","value":"rc"},{"name":"PATH","value":"/bin"},
      {"name":"NCCL_SOCKET_IFNAME","valueFrom":{"configMapKeyRef":{"name":"x","key":"y"}}}]}]}}}}}})");
  auto r = ReadReference(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->env.size(), 3u);
  EXPECT_EQ(r->env.at("FI_PROVIDER"), "verbs");
  EXPECT_EQ(r->skipped, 1);
  EXPECT_EQ(r->tolerations.size(), 1u);
}

TEST(CanaryReference, ReadsAConfigMapAndRefusesWhatHasNoTemplate) {
  auto cm = ReadReference(json::parse(R"({"kind":"ConfigMap","data":{"NCCL_DEBUG":"INFO","x":"y"}})"));
  ASSERT_TRUE(cm.ok());
  EXPECT_EQ(cm->env.size(), 1u);
  EXPECT_FALSE(ReadReference(json::parse(R"({"kind":"Service"})")).ok());
  EXPECT_FALSE(ReadReference(json::parse(R"([1])")).ok());
  EXPECT_FALSE(ReadReference(json::parse(R"({"kind":"Job","spec":{"template":{"spec":{}}}})")).ok());
}

}  // namespace
}  // namespace tocsin::canary

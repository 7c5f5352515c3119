#include "policy/policy.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "audit/catalog.h"
#include "testing/status_matchers.h"

namespace tocsin::policy {
namespace {

TEST(PolicyTest, OnePolicyAndBindingPerCheckAfterTheParams) {
  Params params;
  params.rdma_resources = {"example.com/ib"};
  params.fabric_network = "rdma-net";
  params.topology_label = "cloud.google.com/gce-topology-block";
  Options options;
  options.deny = {audit::kJobNcclFallbackEnv};
  ASSERT_OK_AND_ASSIGN(auto docs, Manifests(params, options));
  ASSERT_EQ(docs.size(), 1 + 2 * PolicyCheckIds().size());
  EXPECT_EQ(docs[0]["kind"], "ConfigMap");
  EXPECT_EQ(docs[0]["data"]["rdmaResources"], "example.com/ib");
  EXPECT_EQ(docs[0]["data"]["ipcLockNeeded"], "true");
  for (size_t i = 0; i < PolicyCheckIds().size(); ++i) {
    const auto& policy = docs[1 + 2 * i];
    const auto& binding = docs[2 + 2 * i];
    const std::string& id = PolicyCheckIds()[i];
    EXPECT_NE(audit::Catalog().Find(id), nullptr) << id;
    EXPECT_EQ(policy["kind"], "ValidatingAdmissionPolicy");
    EXPECT_EQ(policy["spec"]["failurePolicy"], "Ignore");
    EXPECT_EQ(policy["metadata"]["annotations"]["tocsin.io/check"], id);
    EXPECT_NE(policy["spec"]["validations"][0]["messageExpression"].get<std::string>().find(
                  "'" + id + ": '"),
              std::string::npos);
    EXPECT_EQ(binding["spec"]["policyName"], policy["metadata"]["name"]);
    EXPECT_EQ(binding["spec"]["validationActions"][0],
              id == audit::kJobNcclFallbackEnv ? "Deny" : "Warn");
  }
}

TEST(PolicyTest, UnknownDenyIdIsAnError) {
  Options options;
  options.deny = {"job.nope"};
  auto docs = Manifests({}, options);
  ASSERT_FALSE(docs.ok());
  EXPECT_NE(docs.status().message().find("job.nope"), std::string::npos);
  EXPECT_NE(docs.status().message().find(audit::kJobRdmaNotRequested), std::string::npos);
}

TEST(PolicyTest, YamlReadsBackAsTheSameDocuments) {
  ASSERT_OK_AND_ASSIGN(auto docs, Manifests({}, {}));
  auto read = YAML::LoadAll(ToYaml(docs));
  ASSERT_EQ(read.size(), docs.size());
  const auto& policy = read[1];
  // A long string is a literal block, which ends with a newline; a short one is quoted.
  EXPECT_EQ(policy["spec"]["variables"][1]["expression"].as<std::string>(),
            docs[1]["spec"]["variables"][1]["expression"].get<std::string>() + "\n");
  EXPECT_EQ(policy["spec"]["validations"][0]["expression"].as<std::string>(),
            docs[1]["spec"]["validations"][0]["expression"].get<std::string>());
  EXPECT_EQ(policy["spec"]["failurePolicy"].as<std::string>(), "Ignore");
  EXPECT_EQ(read[0]["data"]["fabricNetwork"].as<std::string>(), "");
}

}  // namespace
}  // namespace tocsin::policy

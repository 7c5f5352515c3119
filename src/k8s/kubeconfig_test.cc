#include "k8s/kubeconfig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace tocsin::k8s {
namespace {

namespace fs = std::filesystem;

class KubeconfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    return tmp_.Write(name, text);
  }
  ::tocsin::testing::ScopedTempDir tmp_{"kubeconfig"};
  const std::string& dir_ = tmp_.path();
};

// "-----BEGIN CERTIFICATE-----\nCA\n" in base64.
constexpr const char* kCaB64 = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==";

TEST_F(KubeconfigTest, CurrentContextWithInlineDataAndToken) {
  std::string path = Write("config", std::string(R"(apiVersion: v1
kind: Config
current-context: prod
clusters:
- name: prod-cluster
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: )") + kCaB64 +
                                         R"(
contexts:
- name: prod
  context: {cluster: prod-cluster, user: admin, namespace: ml}
users:
- name: admin
  user:
    token: abc.def
)");
  auto a = LoadKubeconfig({path}, "");
  ASSERT_OK(a);
  EXPECT_EQ(a->server, "https://10.0.0.1:6443");
  EXPECT_EQ(a->context, "prod");
  EXPECT_EQ(a->ca_pem, "-----BEGIN CERTIFICATE-----\nCA\n");
  EXPECT_EQ(a->token, "abc.def");
  EXPECT_FALSE(a->insecure_skip_tls_verify);
  EXPECT_NE(a->origin.find("context prod"), std::string::npos);
}

TEST_F(KubeconfigTest, FilesAreRelativeToTheKubeconfig) {
  Write("certs/ca.pem", "CA-PEM");
  Write("certs/client.pem", "CERT-PEM");
  Write("certs/client-key.pem", "KEY-PEM");
  std::string path = Write("config", R"(current-context: c
clusters:
- name: c
  cluster: {server: "https://api.example:443", certificate-authority: certs/ca.pem}
contexts:
- name: c
  context: {cluster: c, user: u}
users:
- name: u
  user: {client-certificate: certs/client.pem, client-key: certs/client-key.pem}
)");
  auto a = LoadKubeconfig({path}, "");
  ASSERT_OK(a);
  EXPECT_EQ(a->ca_pem, "CA-PEM");
  EXPECT_EQ(a->client_cert_pem, "CERT-PEM");
  EXPECT_EQ(a->client_key_pem, "KEY-PEM");
}

TEST_F(KubeconfigTest, ExecPluginIsRead) {
  std::string path = Write("config", R"(current-context: eks
clusters:
- {name: c, cluster: {server: "https://eks.example"}}
contexts:
- {name: eks, context: {cluster: c, user: u}}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: aws
      args: [eks, get-token, --cluster-name, train]
      env: [{name: AWS_PROFILE, value: ml}]
      provideClusterInfo: true
      interactiveMode: Never
)");
  auto a = LoadKubeconfig({path}, "");
  ASSERT_OK(a);
  ASSERT_TRUE(a->exec.has_value());
  EXPECT_EQ(a->exec->command, "aws");  // a bare name is looked up in PATH, not made relative
  EXPECT_EQ(a->exec->args.size(), 4u);
  EXPECT_EQ(a->exec->env, std::vector<std::string>{"AWS_PROFILE=ml"});
  EXPECT_TRUE(a->exec->provide_cluster_info);
}

TEST_F(KubeconfigTest, MergedFilesFirstDefinitionWins) {
  std::string a = Write("a", R"(current-context: one
clusters:
- {name: c, cluster: {server: "https://first"}}
contexts:
- {name: one, context: {cluster: c}}
)");
  std::string b = Write("b", R"(current-context: two
clusters:
- {name: c, cluster: {server: "https://second"}}
- {name: d, cluster: {server: "https://d"}}
contexts:
- {name: two, context: {cluster: d}}
)");
  auto r = LoadKubeconfig({a, b}, "");
  ASSERT_OK(r);
  EXPECT_EQ(r->server, "https://first");
  auto two = LoadKubeconfig({b, a}, "");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->server, "https://d");
  auto explicit_ctx = LoadKubeconfig({a, b}, "two");
  ASSERT_TRUE(explicit_ctx.ok());
  EXPECT_EQ(explicit_ctx->server, "https://d");
}

TEST_F(KubeconfigTest, ErrorsNameTheFileAndEntry) {
  std::string path = Write("config", R"(current-context: x
clusters: []
contexts:
- {name: x, context: {cluster: missing, user: u}}
)");
  auto r = LoadKubeconfig({path}, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cluster \"missing\""), std::string::npos);
  EXPECT_NE(r.status().message().find(path), std::string::npos);

  auto none = LoadKubeconfig({path}, "nope");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no context \"nope\""), std::string::npos);

  std::string bad = Write("bad", "clusters: [\n  - {name: c\n");
  auto parse = LoadKubeconfig({bad}, "");
  ASSERT_FALSE(parse.ok());
  EXPECT_EQ(parse.status().code(), StatusCode::kParseError);

  std::string b64 = Write("b64", R"(current-context: x
clusters:
- {name: c, cluster: {server: "https://s", certificate-authority-data: "!!!"}}
contexts:
- {name: x, context: {cluster: c}}
)");
  auto rb = LoadKubeconfig({b64}, "");
  ASSERT_FALSE(rb.ok());
  EXPECT_NE(rb.status().message().find("certificate-authority-data is not base64"),
            std::string::npos);

  std::string legacy = Write("legacy", R"(current-context: x
clusters:
- {name: c, cluster: {server: "https://s"}}
contexts:
- {name: x, context: {cluster: c, user: g}}
users:
- {name: g, user: {auth-provider: {name: gcp}}}
)");
  auto rl = LoadKubeconfig({legacy}, "");
  ASSERT_FALSE(rl.ok());
  EXPECT_NE(rl.status().message().find("auth-provider \"gcp\""), std::string::npos);
}

TEST_F(KubeconfigTest, InClusterServiceAccount) {
  Write("sa/ca.crt", "CLUSTER-CA");
  Write("sa/token", "sa-token\n");
  auto a = LoadInCluster("10.96.0.1", "443", dir_ + "/sa");
  ASSERT_OK(a);
  EXPECT_EQ(a->server, "https://10.96.0.1:443");
  EXPECT_EQ(a->ca_pem, "CLUSTER-CA");
  EXPECT_EQ(a->token_file, dir_ + "/sa/token");
  auto v6 = LoadInCluster("fd00::1", "443", dir_ + "/sa");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
  auto missing = LoadInCluster("10.96.0.1", "443", dir_ + "/nowhere");
  EXPECT_FALSE(missing.ok());
}

TEST_F(KubeconfigTest, ResolveOrder) {
  std::string home_cfg = Write("home/.kube/config", R"(current-context: h
clusters: [{name: c, cluster: {server: "https://home"}}]
contexts: [{name: h, context: {cluster: c}}]
)");
  std::string env_cfg = Write("env", R"(current-context: e
clusters: [{name: c, cluster: {server: "https://env"}}]
contexts: [{name: e, context: {cluster: c}}]
)");
  std::map<std::string, std::string> env = {{"HOME", dir_ + "/home"}};
  EXPECT_EQ(ResolveAccess({}, env)->server, "https://home");
  env["KUBECONFIG"] = "/nonexistent:" + env_cfg;
  EXPECT_EQ(ResolveAccess({}, env)->server, "https://env");
  EXPECT_EQ(ResolveAccess({home_cfg, ""}, env)->server, "https://home");
  auto nothing = ResolveAccess({}, {{"HOME", dir_ + "/empty"}});
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.status().message().find("--from"), std::string::npos);
}

}  // namespace
}  // namespace tocsin::k8s

#include "k8s/exec_credential.h"

#include <gtest/gtest.h>

#include <atomic>

#include "testing/status_matchers.h"

namespace tocsin::k8s {
namespace {

constexpr const char* kV1 = "client.authentication.k8s.io/v1";

// Found by fuzz_kube_auth: a field of another type than the API's threw (a crash, exit 3).
TEST(ExecCredentialTest, FieldsOfAnotherTypeAreErrorsNotExceptions) {
  for (const char* text :
       {R"({"kind":{"token":"x"},"apiVersion":"client.authentication.k8s.io/v1"})",
        R"({"kind":"ExecCredential","apiVersion":7})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":"x"})"}) {
    auto r = ParseExecCredential(text, "client.authentication.k8s.io/v1", "p");
    EXPECT_FALSE(r.ok()) << text;
  }
}

TEST(ExecCredentialTest, TokenWithExpiry) {
  auto c = ParseExecCredential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{},
          "status":{"token":"k8s-aws-v1.abc","expirationTimestamp":"2026-11-29T01:00:00Z"}})",
      kV1, "aws");
  ASSERT_OK(c);
  EXPECT_EQ(c->token, "k8s-aws-v1.abc");
  ASSERT_TRUE(c->expires.has_value());
  EXPECT_EQ(FormatRfc3339(*c->expires), "2026-11-29T01:00:00Z");
}

TEST(ExecCredentialTest, ClientCertificate) {
  auto c = ParseExecCredential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
          "status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}})",
      kV1, "p");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->client_cert_pem, "CERT");
  EXPECT_EQ(c->client_key_pem, "KEY");
}

TEST(ExecCredentialTest, BadOutputNamesThePlugin) {
  for (const char* text :
       {"not json", R"({"kind":"Other","apiVersion":"client.authentication.k8s.io/v1"})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",
            "status":{"token":"t"}})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}})",
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
            "status":{"clientCertificateData":"CERT"}})"}) {
    auto c = ParseExecCredential(text, kV1, "my-plugin");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find("my-plugin"), std::string::npos);
  }
}

TEST(ExecCredentialTest, RunsThePluginWithExecInfo) {
  ExecConfig exec;
  exec.api_version = kV1;
  exec.command = "sh";
  // Echoes the token back only if kubectl's KUBERNETES_EXEC_INFO arrived with the cluster.
  exec.args = {"-c",
               "case \"$KUBERNETES_EXEC_INFO\" in *'\"server\":\"https://s\"'*) ;; *) exit 9;; "
               "esac; printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"%s\",\"status\":"
               "{\"token\":\"%s\"}}' client.authentication.k8s.io/v1 \"$TOKEN\""};
  exec.env = {"TOKEN=from-plugin"};
  exec.provide_cluster_info = true;
  ClusterAccess cluster;
  cluster.server = "https://s";
  auto c = RunExecPlugin(exec, cluster, std::chrono::seconds(10));
  ASSERT_OK(c);
  EXPECT_EQ(c->token, "from-plugin");
}

TEST(ExecCredentialTest, FailingAndHungPlugins) {
  ExecConfig exec;
  exec.api_version = kV1;
  exec.command = "sh";
  exec.args = {"-c", "echo 'error: SSO session expired' >&2; exit 1"};
  auto failed = RunExecPlugin(exec, {}, std::chrono::seconds(10));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("SSO session expired"), std::string::npos);
  EXPECT_NE(failed.status().message().find("exited with 1"), std::string::npos);

  exec.args = {"-c", "sleep 30"};
  auto hung = RunExecPlugin(exec, {}, std::chrono::milliseconds(200));
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.status().code(), StatusCode::kTimeout);

  // The client stopping (a daemon's shutdown) does not wait out the plugin's 60 s.
  std::atomic<bool> stop{true};
  auto stopped = RunExecPlugin(exec, {}, std::chrono::seconds(60), &stop);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(stopped.status().message().find("exec credential plugin"), std::string::npos);
}

}  // namespace
}  // namespace tocsin::k8s

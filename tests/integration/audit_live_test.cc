// `tocsin audit` against the test API server (tests/k8s_api/server.py) over HTTPS with a
// generated CA: the same findings as --from on every fixture cluster, every way to authenticate,
// and a clear, bounded error for every way the API can fail. kubectl is checked against the same
// server and kubeconfig, so the server stays faithful to the real API.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "run_binary.h"

namespace tocsin {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FindingsOf;
using testing::JsonRun;
using testing::RunBinary;
using testing::RunResult;
using testing::RunTocsinJson;
using testing::Server;

const std::string kSource = TOCSIN_SOURCE_DIR;
const std::string kClusters = kSource + "/testdata/clusters/";
const std::string kApi = kSource + "/tests/k8s_api/";
const char* kNow = "2026-11-29T00:00:00Z";

class AuditLiveTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/tocsin-audit-live-XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    RunResult r = RunBinary("bash", {kApi + "make_certs.sh", *dir_ + "/pki"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fs::create_directories(*dir_ + "/home");
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }

  static std::unique_ptr<Server> StartServer(const std::string& fixture,
                                             std::vector<std::string> extra = {}, bool tls = true) {
    std::vector<std::string> argv = {"python3", kApi + "server.py", "--max-seconds",
                                     "120",     "--snapshot",       kClusters + fixture};
    if (tls) {
      argv.push_back("--tls-dir");
      argv.push_back(*dir_ + "/pki");
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto server = std::make_unique<Server>(argv);
    EXPECT_GT(server->port(), 0) << "test API server did not start";
    return server;
  }

  // Writes a kubeconfig for `server` with the given users[0].user body (YAML, indented 4).
  static std::string Kubeconfig(const std::string& name, const std::string& server,
                                const std::string& user, const std::string& ca = "ca.crt",
                                const std::string& cluster_extra = "") {
    std::string path = *dir_ + "/" + name;
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                        << "clusters:\n- name: test\n  cluster:\n    server: " << server
                        << "\n    certificate-authority: pki/" << ca << "\n"
                        << cluster_extra
                        << "contexts:\n- name: test\n  context: {cluster: test, user: test}\n"
                        << "users:\n- name: test\n  user:\n"
                        << user;
    return path;
  }
  static std::string ClientCertUser() {
    return "    client-certificate: pki/client.crt\n    client-key: pki/client.key\n";
  }
  static std::string Https(const Server& s) {
    return "https://127.0.0.1:" + std::to_string(s.port());
  }

  static std::vector<std::string> Env() { return {"HOME=" + *dir_ + "/home", "KUBECONFIG="}; }

  static JsonRun Live(const std::string& kubeconfig, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"audit", "-o",           "json",    "--now",
                                     kNow,    "--kubeconfig", kubeconfig};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTocsinJson(args, Env());
  }
  static RunResult LiveRaw(const std::string& kubeconfig, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"audit", "--now", kNow, "--kubeconfig", kubeconfig};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunBinary(TOCSIN_BINARY, args, Env());
  }

  static std::string* dir_;
};

std::string* AuditLiveTest::dir_ = nullptr;

json WithoutSources(json inventory) {
  inventory.erase("sources");
  return inventory;
}

TEST_F(AuditLiveTest, LiveFindingsEqualSnapshotFindingsOnEveryFixture) {
  for (const char* fixture : {"healthy.json", "plugin-crashloop.json", "selector-excluded.json",
                              "zero-rdma.json", "jobs-bad.json", "nodes-only.json", "sriov.json"}) {
    SCOPED_TRACE(fixture);
    auto server = StartServer(fixture);
    std::string kc = Kubeconfig("cert.yaml", Https(*server), ClientCertUser());
    // Pages of 2 objects: every resource of every fixture needs limit/continue.
    JsonRun live = Live(kc, {"--chunk-size", "2"});
    JsonRun from =
        RunTocsinJson({"audit", "-o", "json", "--now", kNow, "--from", kClusters + fixture});
    EXPECT_EQ(live.exit_code, from.exit_code);
    EXPECT_EQ(live.report["findings"], from.report["findings"]);
    EXPECT_EQ(WithoutSources(live.report["inventory"]), WithoutSources(from.report["inventory"]));
    EXPECT_EQ(live.report["host"], Https(*server));
  }
}

// `tocsin diff` live (ctx:NAME) reads nodes, device plugins and their ConfigMaps as the snapshot
// has them; the kinds the test server does not serve (network attachments, SR-IOV and
// NicClusterPolicies, PyTorchJobs, CronJobs: 404) are skipped, so only those differ.
TEST_F(AuditLiveTest, DiffReadsALiveContextAsItsSnapshot) {
  const std::string staging = kClusters + "../drift/staging.json";
  auto server = StartServer("../drift/staging.json");
  std::string kc = Kubeconfig("cert.yaml", Https(*server), ClientCertUser());
  JsonRun same = RunTocsinJson(
      {"diff", "-o", "json", "--fail-on", "info", "--kubeconfig", kc, "ctx:test", "ctx:"}, Env());
  EXPECT_EQ(same.exit_code, 0) << same.report.dump(2);
  EXPECT_TRUE(same.report["findings"].empty());
  EXPECT_EQ(same.report["inventory"]["a"]["nodes"], 4);
  EXPECT_EQ(same.report["inventory"]["a"]["source"], Https(*server));
  JsonRun vs = RunTocsinJson(
      {"diff", "-o", "json", "--kubeconfig", kc, "--context-a", "test", staging}, Env());
  ASSERT_FALSE(vs.report["findings"].empty()) << vs.report.dump(2);
  for (const auto& f : vs.report["findings"]) {
    std::string subject = f["subject"];
    bool unserved = subject.starts_with("network ") || subject.starts_with("sriov policy ") ||
                    subject.starts_with("NicClusterPolicy ") || subject.starts_with("template ");
    EXPECT_TRUE(unserved) << f.dump();
  }
}

TEST_F(AuditLiveTest, PluginCrashLoopIsCriticalThroughTheApi) {
  auto server = StartServer("plugin-crashloop.json",
                            {"--require-client-cert", "--log", *dir_ + "/crashloop.log"});
  JsonRun r =
      Live(Kubeconfig("cert.yaml", Https(*server), ClientCertUser()), {"--chunk-size", "2"});
  EXPECT_EQ(r.exit_code, 1);
  auto ds = FindingsOf(r.report, "daemonset.not-ready");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0]["severity"], "critical");
  EXPECT_EQ(ds[0]["since"], "2026-03-03T00:00:02Z");
  std::ifstream log(*dir_ + "/crashloop.log");
  std::string line, all;
  int continued = 0;
  while (std::getline(log, line)) {
    all += line + "\n";
    if (line.find("&continue=") != std::string::npos) ++continued;
    EXPECT_NE(line.find("auth=x509"), std::string::npos) << line;
  }
  EXPECT_GE(continued, 2) << all;
}

TEST_F(AuditLiveTest, BearerTokenAndPlainHttp) {
  auto server = StartServer("healthy.json", {"--token", "s3cret"}, /*tls=*/false);
  std::string url = "http://127.0.0.1:" + std::to_string(server->port());
  JsonRun ok = Live(Kubeconfig("token.yaml", url, "    token: s3cret\n"), {"--fail-on", "info"});
  EXPECT_EQ(ok.exit_code, 0) << ok.report.dump(2);
  EXPECT_TRUE(ok.report["findings"].empty());

  RunResult bad = LiveRaw(Kubeconfig("bad-token.yaml", url, "    token: wrong\n"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("HTTP 401"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(url + "/api/v1/nodes"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << "no report, never a false healthy: " << bad.out;
}

TEST_F(AuditLiveTest, TokenFileAndExecPlugin) {
  auto server = StartServer("healthy.json", {"--token", "from-plugin", "--require-client-cert"});
  std::ofstream(*dir_ + "/token") << "from-plugin\n";
  JsonRun file = Live(Kubeconfig("tokenfile.yaml", Https(*server), "    tokenFile: token\n"));
  EXPECT_EQ(file.exit_code, 0) << file.report.dump(2);

  std::string exec =
      "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
      "      command: " +
      kApi +
      "exec_credential.sh\n"
      "      args: [from-plugin]\n      interactiveMode: Never\n";
  JsonRun r = Live(Kubeconfig("exec.yaml", Https(*server), exec));
  EXPECT_EQ(r.exit_code, 0) << r.report.dump(2);
  EXPECT_EQ(r.report["inventory"]["nodes"], 4);

  std::string failing =
      "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
      "      command: " +
      kApi + "exec_credential.sh\n";  // no token arg
  RunResult f = LiveRaw(Kubeconfig("exec-bad.yaml", Https(*server), failing));
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("exec_credential.sh"), std::string::npos) << f.err;
}

TEST_F(AuditLiveTest, ServerSignedByAnotherCaIsRefused) {
  auto server = StartServer("healthy.json");
  RunResult r =
      LiveRaw(Kubeconfig("other-ca.yaml", Https(*server), ClientCertUser(), "other-ca.crt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("TLS"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(Https(*server)), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// tls-server-name: the certificate is checked against that name (a wrong one fails, although the
// certificate also names the server's address), while the connection and the Host header stay the
// server's, as client-go does.
TEST_F(AuditLiveTest, TlsServerNameIsVerifiedWhileConnectingToTheServerAddress) {
  auto server = StartServer("healthy.json", {"--log", *dir_ + "/sni.log"});
  JsonRun ok = Live(Kubeconfig("sni.yaml", Https(*server), ClientCertUser(), "ca.crt",
                               "    tls-server-name: api.tocsin.test\n"));
  EXPECT_EQ(ok.exit_code, 0) << ok.report.dump(2);
  EXPECT_EQ(ok.report["inventory"]["nodes"], 4);
  std::ifstream log(*dir_ + "/sni.log");
  std::string first;
  std::getline(log, first);
  EXPECT_NE(first.find("host=127.0.0.1:" + std::to_string(server->port())), std::string::npos)
      << first;

  std::string wrong_kc = Kubeconfig("sni-wrong.yaml", Https(*server), ClientCertUser(), "ca.crt",
                                    "    tls-server-name: other.tocsin.test\n");
  RunResult wrong = LiveRaw(wrong_kc);
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("other.tocsin.test"), std::string::npos) << wrong.err;
  EXPECT_TRUE(wrong.out.empty());

  // kubectl agrees on both kubeconfigs.
  std::vector<std::string> env = {"HOME=" + *dir_ + "/home-kubectl"};
  RunResult k_ok = RunBinary("kubectl", {"--kubeconfig", *dir_ + "/sni.yaml", "get", "nodes"}, env);
  EXPECT_EQ(k_ok.exit_code, 0) << k_ok.err;
  RunResult k_wrong = RunBinary("kubectl", {"--kubeconfig", wrong_kc, "get", "nodes"}, env);
  EXPECT_NE(k_wrong.exit_code, 0);
  EXPECT_NE(k_wrong.err.find("other.tocsin.test"), std::string::npos) << k_wrong.err;
}

TEST_F(AuditLiveTest, TransientErrorsAreRetriedAndExpiredContinueRelists) {
  auto server = StartServer("plugin-crashloop.json", {"--fail-first", "2", "--expire-continue"});
  JsonRun r =
      Live(Kubeconfig("cert.yaml", Https(*server), ClientCertUser()), {"--chunk-size", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.report["inventory"]["pods"], 3);
  EXPECT_EQ(FindingsOf(r.report, "daemonset.not-ready").size(), 1u);
}

TEST_F(AuditLiveTest, ForbiddenTruncatedAndUnreachableAreClearErrors) {
  {
    auto server = StartServer("healthy.json", {"--forbid", "pods"});
    RunResult r = LiveRaw(Kubeconfig("cert.yaml", Https(*server), ClientCertUser()));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("HTTP 403"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("/api/v1/pods"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("deploy/rbac/audit.yaml"), std::string::npos) << r.err;
  }
  {
    auto server = StartServer("healthy.json", {"--truncate", "daemonsets"});
    RunResult r = LiveRaw(Kubeconfig("cert.yaml", Https(*server), ClientCertUser()));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("/apis/apps/v1/daemonsets"), std::string::npos) << r.err;
  }
  // A port nothing listens on: bound the server's port, then free it.
  int port = 0;
  {
    auto server = StartServer("healthy.json");
    port = server->port();
  }
  std::string url = "https://127.0.0.1:" + std::to_string(port);
  RunResult r = LiveRaw(Kubeconfig("gone.yaml", url, ClientCertUser()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(url), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("after 4 attempts"), std::string::npos) << r.err;
}

TEST_F(AuditLiveTest, HungApiServerIsBoundedByRequestTimeout) {
  auto server = StartServer("healthy.json", {"--hang", "nodes", "--hang-seconds", "30"});
  auto start = std::chrono::steady_clock::now();
  RunResult r = LiveRaw(Kubeconfig("cert.yaml", Https(*server), ClientCertUser()),
                        {"--request-timeout", "0.5"});
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("within 500 ms"), std::string::npos) << r.err;
  // 4 attempts of 0.5 s and back-off of 0.25 + 0.5 + 1 s: far below the server's 30 s hang.
  EXPECT_LT(took, std::chrono::seconds(15));
}

TEST_F(AuditLiveTest, KubectlReadsTheSameServerAndKubeconfig) {
  auto server = StartServer("plugin-crashloop.json");
  std::string kc = Kubeconfig("cert.yaml", Https(*server), ClientCertUser());
  std::vector<std::string> env = {"HOME=" + *dir_ + "/home-kubectl"};
  RunResult nodes = RunBinary("kubectl", {"--kubeconfig", kc, "get", "nodes"}, env);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  EXPECT_NE(nodes.out.find("STATUS"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("gpu-node-01"), std::string::npos) << nodes.out;
  RunResult pods = RunBinary("kubectl", {"--kubeconfig", kc, "get", "pods", "-A"}, env);
  ASSERT_EQ(pods.exit_code, 0) << pods.err;
  EXPECT_NE(pods.out.find("NAMESPACE"), std::string::npos) << pods.out;
  EXPECT_NE(pods.out.find("CrashLoopBackOff"), std::string::npos) << pods.out;
  RunResult watch = RunBinary(
      "kubectl", {"--kubeconfig", kc, "get", "nodes", "--watch", "--request-timeout", "5s"}, env);
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
}

}  // namespace
}  // namespace tocsin

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tocsin::k8s {

// users[].user.exec of a kubeconfig (client.authentication.k8s.io/v1 or v1beta1).
struct ExecConfig {
  std::string api_version;
  std::string command;
  std::vector<std::string> args;
  std::vector<std::string> env;  // "NAME=value"
  bool provide_cluster_info = false;
};

// Everything needed to reach and authenticate to one API server. PEM material is held in
// memory (file references are read at load time, relative to the kubeconfig's folder, as
// kubectl does).
struct ClusterAccess {
  std::string origin;   // "kubeconfig /path (context ctx)" or "in-cluster service account"
  std::string server;   // https://host:port, without a trailing '/'
  std::string context;  // empty for in-cluster
  std::string ca_pem;   // empty: the system trust store
  std::string tls_server_name;
  bool insecure_skip_tls_verify = false;  // only when the kubeconfig says so; reported loudly
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;
  std::string token_file;  // re-read on every request set (projected tokens rotate)
  std::optional<ExecConfig> exec;
};

struct KubeconfigOptions {
  std::string kubeconfig;  // --kubeconfig; empty: $KUBECONFIG, then ~/.kube/config
  std::string context;     // --context; empty: current-context
};

// Loads one context from kubeconfig files. `paths` are merged in order as kubectl merges
// $KUBECONFIG: the first file that defines a name or sets current-context wins. Errors name the
// file and the entry.
Result<ClusterAccess> LoadKubeconfig(const std::vector<std::string>& paths,
                                     const std::string& context);

// The same for one kubeconfig's text, as if read from `path` (file references resolve against
// its folder).
Result<ClusterAccess> ParseKubeconfig(const std::string& text, const std::string& path,
                                      const std::string& context);

// The in-cluster service account: `host`/`port` from KUBERNETES_SERVICE_HOST/PORT, the token and
// CA from `sa_dir` (/var/run/secrets/kubernetes.io/serviceaccount in a pod).
Result<ClusterAccess> LoadInCluster(const std::string& host, const std::string& port,
                                    const std::string& sa_dir);

// client-go's default loading rules: --kubeconfig, else $KUBECONFIG (':'-separated), else
// ~/.kube/config when it exists, else the in-cluster service account when
// KUBERNETES_SERVICE_HOST is set. `getenv` is injected for tests.
Result<ClusterAccess> ResolveAccess(const KubeconfigOptions& options,
                                    const std::map<std::string, std::string>& env);

// The environment variables ResolveAccess reads, from this process.
std::map<std::string, std::string> AccessEnvironment();

}  // namespace tocsin::k8s

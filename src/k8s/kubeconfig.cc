#include "k8s/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "base/strings.h"
#include "sys/env.h"

namespace tocsin::k8s {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInClusterDir = "/var/run/secrets/kubernetes.io/serviceaccount";

Result<std::string> ReadWholeFile(const std::string& path, const std::string& what) {
  auto text = ReadRegularFile(path);
  if (!text.ok()) return text.status().WithPrefix(what);
  return text;
}

std::string ResolveRelative(const std::string& path, const std::string& kubeconfig) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(kubeconfig).parent_path() / path).string();
}

std::string Scalar(const YAML::Node& n, const char* key) {
  YAML::Node v = n[key];
  return v && v.IsScalar() ? v.as<std::string>() : "";
}

// One named entry (cluster, user, context) and the file that defined it.
struct Entry {
  YAML::Node body;
  std::string file;
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
};

// Merges one kubeconfig's text (read from `path`) into `m`.
Status MergeText(const std::string& text, const std::string& path, Merged& m) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::ParseError("kubeconfig " + path + ": " + e.what());
  }
  if (!root || root.IsNull()) return Status::Ok();  // an empty file contributes nothing
  if (!root.IsMap()) return Status::ParseError("kubeconfig " + path + ": not a YAML mapping");
  auto merge_list = [&](const char* list, const char* inner,
                        std::map<std::string, Entry>& into) -> Status {
    YAML::Node items = root[list];
    if (!items || items.IsNull()) return Status::Ok();
    if (!items.IsSequence()) {
      return Status::ParseError("kubeconfig " + path + ": " + list + " is not a list");
    }
    for (size_t i = 0; i < items.size(); ++i) {
      std::string name = Scalar(items[i], "name");
      if (name.empty()) {
        return Status::ParseError("kubeconfig " + path + ": " + list + "[" + std::to_string(i) +
                                  "] has no name");
      }
      into.emplace(name, Entry{items[i][inner], path});  // first definition wins
    }
    return Status::Ok();
  };
  try {
    if (Status st = merge_list("clusters", "cluster", m.clusters); !st.ok()) return st;
    if (Status st = merge_list("users", "user", m.users); !st.ok()) return st;
    if (Status st = merge_list("contexts", "context", m.contexts); !st.ok()) return st;
    if (m.current_context.empty()) m.current_context = Scalar(root, "current-context");
  } catch (const YAML::Exception& e) {
    return Status::ParseError("kubeconfig " + path + ": " + e.what());
  }
  return Status::Ok();
}

// `key-data` (base64) or `key` (a file, relative to the kubeconfig).
Result<std::string> DataOrFile(const YAML::Node& n, const std::string& key, const Entry& where,
                               const std::string& entry_name) {
  std::string data = Scalar(n, (key + "-data").c_str());
  std::string what = "kubeconfig " + where.file + ": " + entry_name + " " + key;
  if (!data.empty()) {
    auto bytes = DecodeBase64(std::string(Trim(data)));
    if (!bytes) return Status::ParseError(what + "-data is not base64");
    return *std::move(bytes);
  }
  std::string file = Scalar(n, key.c_str());
  if (file.empty()) return std::string();
  return ReadWholeFile(ResolveRelative(file, where.file), what);
}

Status FillCluster(const Entry& e, const std::string& name, ClusterAccess& out) {
  const YAML::Node& c = e.body;
  if (!c || !c.IsMap()) {
    return Status::ParseError("kubeconfig " + e.file + ": cluster \"" + name + "\" has no body");
  }
  out.server = Scalar(c, "server");
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  if (out.server.empty()) {
    return Status::ParseError("kubeconfig " + e.file + ": cluster \"" + name + "\" has no server");
  }
  TOCSIN_ASSIGN_OR_RETURN(out.ca_pem,
                          DataOrFile(c, "certificate-authority", e, "cluster \"" + name + "\""));
  out.tls_server_name = Scalar(c, "tls-server-name");
  out.insecure_skip_tls_verify = Scalar(c, "insecure-skip-tls-verify") == "true";
  return Status::Ok();
}

Status FillUser(const Entry& e, const std::string& name, ClusterAccess& out) {
  const YAML::Node& u = e.body;
  std::string label = "user \"" + name + "\"";
  if (!u || u.IsNull()) return Status::Ok();  // anonymous
  if (!u.IsMap())
    return Status::ParseError("kubeconfig " + e.file + ": " + label + " is not a map");
  TOCSIN_ASSIGN_OR_RETURN(out.client_cert_pem, DataOrFile(u, "client-certificate", e, label));
  TOCSIN_ASSIGN_OR_RETURN(out.client_key_pem, DataOrFile(u, "client-key", e, label));
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    return Status::ParseError("kubeconfig " + e.file + ": " + label +
                              " has a client certificate without its key (or the reverse)");
  }
  out.token = Scalar(u, "token");
  std::string token_file = Scalar(u, "tokenFile");
  if (out.token.empty() && !token_file.empty()) {
    out.token_file = ResolveRelative(token_file, e.file);
  }
  if (u["auth-provider"]) {
    return Status::InvalidArgument(
        "kubeconfig " + e.file + ": " + label + " uses auth-provider \"" +
        Scalar(u["auth-provider"], "name") +
        "\", removed from kubectl; use an exec credential plugin (e.g. gke-gcloud-auth-plugin, "
        "kubelogin)");
  }
  if (!Scalar(u, "username").empty() && out.token.empty() && out.client_cert_pem.empty()) {
    return Status::InvalidArgument("kubeconfig " + e.file + ": " + label +
                                   " uses basic authentication, which Kubernetes removed in 1.19");
  }
  if (YAML::Node x = u["exec"]; x && x.IsMap()) {
    ExecConfig exec;
    exec.api_version = Scalar(x, "apiVersion");
    exec.command = Scalar(x, "command");
    if (exec.command.empty()) {
      return Status::ParseError("kubeconfig " + e.file + ": " + label + " exec has no command");
    }
    if (exec.api_version != "client.authentication.k8s.io/v1" &&
        exec.api_version != "client.authentication.k8s.io/v1beta1") {
      return Status::InvalidArgument("kubeconfig " + e.file + ": " + label + " exec apiVersion \"" +
                                     exec.api_version +
                                     "\" is not client.authentication.k8s.io/v1 or v1beta1");
    }
    exec.command = exec.command.find('/') != std::string::npos
                       ? ResolveRelative(exec.command, e.file)
                       : exec.command;
    if (YAML::Node args = x["args"]; args && args.IsSequence()) {
      for (const auto& a : args) exec.args.push_back(a.as<std::string>());
    }
    if (YAML::Node env = x["env"]; env && env.IsSequence()) {
      for (const auto& v : env) exec.env.push_back(Scalar(v, "name") + "=" + Scalar(v, "value"));
    }
    exec.provide_cluster_info = Scalar(x, "provideClusterInfo") == "true";
    out.exec = std::move(exec);
  }
  return Status::Ok();
}

}  // namespace

static Result<ClusterAccess> Resolve(const Merged& m, const std::vector<std::string>& paths,
                                     const std::string& context) {
  std::string files;
  for (const auto& p : paths) files += (files.empty() ? "" : ":") + p;
  std::string ctx_name = context.empty() ? m.current_context : context;
  if (ctx_name.empty()) {
    return Status::InvalidArgument("kubeconfig " + files + ": no current-context; pass --context");
  }
  auto ctx = m.contexts.find(ctx_name);
  if (ctx == m.contexts.end()) {
    return Status::NotFound("kubeconfig " + files + ": no context \"" + ctx_name + "\"");
  }
  ClusterAccess out;
  out.context = ctx_name;
  out.origin = "kubeconfig " + ctx->second.file + " (context " + ctx_name + ")";
  try {
    std::string cluster = Scalar(ctx->second.body, "cluster");
    std::string user = Scalar(ctx->second.body, "user");
    auto c = m.clusters.find(cluster);
    if (c == m.clusters.end()) {
      return Status::NotFound("kubeconfig " + files + ": context \"" + ctx_name +
                              "\" names cluster \"" + cluster + "\", which is not defined");
    }
    if (Status st = FillCluster(c->second, cluster, out); !st.ok()) return st;
    if (!user.empty()) {
      auto u = m.users.find(user);
      if (u == m.users.end()) {
        return Status::NotFound("kubeconfig " + files + ": context \"" + ctx_name +
                                "\" names user \"" + user + "\", which is not defined");
      }
      if (Status st = FillUser(u->second, user, out); !st.ok()) return st;
    }
  } catch (const YAML::Exception& e) {
    return Status::ParseError("kubeconfig " + files + ": " + e.what());
  }
  return out;
}

Result<ClusterAccess> LoadKubeconfig(const std::vector<std::string>& paths,
                                     const std::string& context) {
  Merged m;
  for (const auto& p : paths) {
    TOCSIN_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(p, "kubeconfig"));
    if (Status st = MergeText(text, p, m); !st.ok()) return st;
  }
  return Resolve(m, paths, context);
}

Result<ClusterAccess> ParseKubeconfig(const std::string& text, const std::string& path,
                                      const std::string& context) {
  Merged m;
  if (Status st = MergeText(text, path, m); !st.ok()) return st;
  return Resolve(m, {path}, context);
}

Result<ClusterAccess> LoadInCluster(const std::string& host, const std::string& port,
                                    const std::string& sa_dir) {
  if (host.empty() || port.empty()) {
    return Status::NotFound("in-cluster: KUBERNETES_SERVICE_HOST/PORT are not set");
  }
  ClusterAccess out;
  out.origin = "in-cluster service account (" + sa_dir + ")";
  bool v6 = host.find(':') != std::string::npos;
  out.server = "https://" + (v6 ? "[" + host + "]" : host) + ":" + port;
  TOCSIN_ASSIGN_OR_RETURN(out.ca_pem, ReadWholeFile(sa_dir + "/ca.crt", "in-cluster CA"));
  // The projected token rotates (about hourly): read it for each request set, not once.
  out.token_file = sa_dir + "/token";
  TOCSIN_ASSIGN_OR_RETURN(auto token, ReadWholeFile(out.token_file, "in-cluster token"));
  (void)token;
  return out;
}

Result<ClusterAccess> ResolveAccess(const KubeconfigOptions& options,
                                    const std::map<std::string, std::string>& env) {
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  if (!options.kubeconfig.empty()) return LoadKubeconfig({options.kubeconfig}, options.context);
  if (std::string list = get("KUBECONFIG"); !list.empty()) {
    std::vector<std::string> paths;
    std::stringstream ss(list);
    for (std::string p; std::getline(ss, p, ':');) {
      if (!p.empty() && fs::exists(p)) paths.push_back(p);
    }
    if (paths.empty()) return Status::NotFound("KUBECONFIG=" + list + ": none of its files exist");
    return LoadKubeconfig(paths, options.context);
  }
  if (std::string home = get("HOME"); !home.empty() && fs::exists(home + "/.kube/config")) {
    return LoadKubeconfig({home + "/.kube/config"}, options.context);
  }
  if (!get("KUBERNETES_SERVICE_HOST").empty()) {
    if (!options.context.empty()) {
      return Status::InvalidArgument("--context needs a kubeconfig; none was found");
    }
    return LoadInCluster(get("KUBERNETES_SERVICE_HOST"), get("KUBERNETES_SERVICE_PORT"),
                         kInClusterDir);
  }
  return Status::NotFound(
      "no cluster credentials: no --kubeconfig, no KUBECONFIG, no ~/.kube/config, not in a pod "
      "(KUBERNETES_SERVICE_HOST unset); or give a snapshot with --from");
}

std::map<std::string, std::string> AccessEnvironment() {
  std::map<std::string, std::string> env;
  for (const char* k :
       {"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    if (const char* v = std::getenv(k)) env[k] = v;
  }
  return env;
}

}  // namespace tocsin::k8s

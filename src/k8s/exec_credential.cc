#include "k8s/exec_credential.h"

#include <nlohmann/json.hpp>

#include "base/json_fields.h"
#include "base/strings.h"
#include "sys/subprocess.h"

namespace tocsin::k8s {

Result<ExecCredential> ParseExecCredential(const std::string& text, const std::string& api_version,
                                           const std::string& plugin) {
  std::string what = "exec credential plugin \"" + plugin + "\"";
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::ParseError(what + ": output is not a JSON object");
  }
  // Fields of another type read as absent (value() would throw on them).
  std::string kind = StringField(j, "kind", 200), api = StringField(j, "apiVersion", 200);
  if (kind != "ExecCredential") {
    return Status::ParseError(what + ": kind is \"" + Quote(kind) + "\", want ExecCredential");
  }
  if (api != api_version) {
    return Status::ParseError(what + ": apiVersion \"" + Quote(api) +
                              "\" differs from the kubeconfig's \"" + api_version + "\"");
  }
  const nlohmann::json status = j.contains("status") ? j["status"] : nlohmann::json::object();
  if (!status.is_object()) return Status::ParseError(what + ": status is not an object");
  ExecCredential out;
  auto str = [&](const char* k) {
    auto it = status.find(k);
    return it != status.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  out.token = str("token");
  out.client_cert_pem = str("clientCertificateData");
  out.client_key_pem = str("clientKeyData");
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    return Status::ParseError(what +
                              ": clientCertificateData without clientKeyData (or the reverse)");
  }
  if (out.token.empty() && out.client_cert_pem.empty()) {
    return Status::ParseError(what + ": status has neither a token nor a client certificate");
  }
  if (std::string exp = str("expirationTimestamp"); !exp.empty()) {
    auto t = ParseRfc3339(exp);
    if (!t)
      return Status::ParseError(what + ": expirationTimestamp \"" + exp + "\" is not RFC 3339");
    out.expires = *t;
  }
  return out;
}

Result<ExecCredential> RunExecPlugin(const ExecConfig& exec, const ClusterAccess& cluster,
                                     std::chrono::milliseconds timeout,
                                     const std::atomic<bool>* stop) {
  nlohmann::json info = {{"kind", "ExecCredential"},
                         {"apiVersion", exec.api_version},
                         {"spec", {{"interactive", false}}}};
  if (exec.provide_cluster_info) {
    nlohmann::json c = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty()) {
      c["certificate-authority-data"] = EncodeBase64(cluster.ca_pem);
    }
    if (!cluster.tls_server_name.empty()) c["tls-server-name"] = cluster.tls_server_name;
    if (cluster.insecure_skip_tls_verify) c["insecure-skip-tls-verify"] = true;
    info["spec"]["cluster"] = c;
  }
  sys::ProcessOptions options;
  options.timeout = timeout;
  options.stop = stop;
  options.extra_env = exec.env;
  options.extra_env.push_back("KUBERNETES_EXEC_INFO=" + info.dump());
  options.max_output = 1 << 20;
  std::vector<std::string> argv = {exec.command};
  argv.insert(argv.end(), exec.args.begin(), exec.args.end());
  auto run = sys::RunProcess(argv, options);
  std::string what = "exec credential plugin \"" + exec.command + "\"";
  if (!run.ok()) return run.status().WithPrefix(what);
  if (run->exit_code != 0) {
    std::string err(Trim(run->err));
    if (err.size() > 400) err = err.substr(0, 400) + "...";
    return Status::Unavailable(what + " exited with " + std::to_string(run->exit_code) +
                               (err.empty() ? "" : ": " + err));
  }
  return ParseExecCredential(run->out, exec.api_version, exec.command);
}

}  // namespace tocsin::k8s

#include "jobview/prometheus.h"

#include <memory>

#include "k8s/api_client.h"

namespace tocsin::jobview {

Result<Fetch> PrometheusFetch(const PrometheusOptions& options) {
  size_t scheme = options.url.find("://");
  size_t authority_end = options.url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (options.url.substr(0, authority_end).find('@') != std::string::npos) {
    return Status::InvalidArgument(
        "--prometheus: credentials in the URL would be printed in the report and in errors: "
        "use --bearer-token-file (or a proxy that authenticates)");
  }
  k8s::ClusterAccess access;
  access.origin = "--prometheus " + options.url;
  access.server = options.url;
  while (access.server.ends_with("/")) access.server.pop_back();
  access.token = options.bearer_token;
  access.token_file = options.token_file;
  access.ca_pem = options.ca_pem;
  k8s::ClientOptions co;
  co.request_timeout = options.timeout;
  co.connect_timeout = std::min(options.timeout, co.connect_timeout);
  co.attempts = options.attempts;
  co.max_body = options.max_body;
  auto client = k8s::ApiClient::Create(std::move(access), co);
  if (!client.ok()) return client.status();
  std::shared_ptr<k8s::ApiClient> shared = std::move(*client);
  return Fetch([shared](const std::string& path) { return shared->Get(path); });
}

}  // namespace tocsin::jobview

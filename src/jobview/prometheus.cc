#include "jobview/prometheus.h"

#include <memory>

#include "k8s/api_client.h"

namespace tocsin::jobview {

Result<Fetch> PrometheusFetch(const PrometheusOptions& options) {
  k8s::ClusterAccess access;
  access.origin = "--prometheus " + options.url;
  access.server = options.url;
  while (access.server.ends_with("/")) access.server.pop_back();
  access.token = options.bearer_token;
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

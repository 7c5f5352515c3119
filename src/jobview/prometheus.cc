#include "jobview/prometheus.h"

#include <memory>
#include <mutex>
#include <vector>

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
  // One client per request in flight (a client is one connection), idle ones reused.
  struct Pool {
    k8s::ClusterAccess access;
    k8s::ClientOptions options;
    std::mutex mu;
    std::vector<std::unique_ptr<k8s::ApiClient>> idle;
  };
  auto pool = std::make_shared<Pool>();
  auto first = k8s::ApiClient::Create(access, co);  // the options are checked now
  if (!first.ok()) return first.status();
  pool->access = std::move(access);
  pool->options = co;
  pool->idle.push_back(std::move(*first));
  return Fetch([pool](const std::string& path) -> Result<std::string> {
    std::unique_ptr<k8s::ApiClient> client;
    {
      std::lock_guard lock(pool->mu);
      if (!pool->idle.empty()) {
        client = std::move(pool->idle.back());
        pool->idle.pop_back();
      }
    }
    if (client == nullptr) {
      auto made = k8s::ApiClient::Create(pool->access, pool->options);
      if (!made.ok()) return made.status();
      client = std::move(*made);
    }
    auto body = client->Get(path);
    std::lock_guard lock(pool->mu);
    pool->idle.push_back(std::move(client));
    return body;
  });
}

}  // namespace tocsin::jobview

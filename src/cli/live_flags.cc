#include "cli/live_flags.h"

#include <algorithm>
#include <iostream>

#include "cli/number_flags.h"
#include "cli/report_flags.h"
#include "k8s/kubeconfig.h"

namespace tocsin::cli {

void LiveFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--kubeconfig", kubeconfig,
                  "Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then the in-cluster "
                  "service account)");
  cmd->add_option("--request-timeout", request_timeout_s,
                  "Seconds one API request may take (retries with backoff come on top)")
      ->check(Seconds())
      ->capture_default_str();
  cmd->add_option("--chunk-size", chunk_size,
                  "Objects per list page (limit/continue); 0 lists each resource at once")
      ->check(Count(0, 1000000))
      ->capture_default_str();
}

Status LiveFlags::Check() const {
  if (request_timeout_s <= 0) return Status::InvalidArgument("--request-timeout must be > 0");
  if (chunk_size < 0) return Status::InvalidArgument("--chunk-size must be >= 0");
  return Status::Ok();
}

int LoadLive(const LiveFlags& f, const std::string& context, const LiveLoader& load,
             k8s::Snapshot& out) {
  auto access = k8s::ResolveAccess({f.kubeconfig, context}, k8s::AccessEnvironment());
  if (!access.ok()) return UsageError(access.status().message());
  if (access->insecure_skip_tls_verify) {
    std::cerr << "warning: TLS verification of " << access->server
              << " is off (insecure-skip-tls-verify in " << access->origin << ")\n";
  }
  k8s::ClientOptions options;
  options.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(f.request_timeout_s * 1000));
  options.connect_timeout = std::min(options.connect_timeout, options.request_timeout);
  options.page_size = f.chunk_size;
  auto client = k8s::ApiClient::Create(*access, options);
  Status st = client.ok() ? load(**client, out) : client.status();
  if (!st.ok()) {
    std::cerr << "tocsin: error: " << access->server << " (" << access->origin
              << "): " << st.message() << "\n";
    return st.code() == StatusCode::kInternal ? 3 : 2;
  }
  return 0;
}

}  // namespace tocsin::cli

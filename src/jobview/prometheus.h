#pragma once

#include <chrono>
#include <string>

#include "base/status.h"
#include "jobview/job_view.h"

namespace tocsin::jobview {

struct PrometheusOptions {
  std::string url;                           // http(s)://host:port[/prefix]
  std::string bearer_token;                  // empty: none
  std::string token_file;                    // --bearer-token-file: re-read as it rotates
  std::string ca_pem;                        // --ca-file's PEM; empty: the system store
  std::chrono::milliseconds timeout{10000};  // one request, connect included
  int attempts = 2;                          // transport errors, 429 and 5xx retry once
  size_t max_body = 256u << 20;              // one answer
};

// The Fetch of QueryJob over libcurl (k8s::ApiClient without Kubernetes' credentials: its
// timeouts, bounded retries and capped body). InvalidArgument for a URL that is not http(s), or
// one with credentials in it (they would be printed in the report and in every error).
Result<Fetch> PrometheusFetch(const PrometheusOptions& options);

}  // namespace tocsin::jobview

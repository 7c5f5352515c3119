#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "k8s/decode.h"
#include "k8s/exec_credential.h"
#include "k8s/kubeconfig.h"
#include "k8s/objects.h"

namespace tocsin::k8s {

struct ClientOptions {
  std::chrono::milliseconds request_timeout{30000};  // one HTTP exchange, connect included
  std::chrono::milliseconds connect_timeout{10000};
  int attempts = 4;                        // per request: transport errors, 429 and 5xx retry
  std::chrono::milliseconds backoff{250};  // doubled after each failed attempt
  std::chrono::milliseconds max_backoff{4000};
  int64_t page_size = 500;  // `limit` of each list request, as kubectl
  size_t max_body = 1ull << 30;
  // A token file (tokenFile, the in-cluster projected token) is read again when its last read is
  // this old, and at once on a 401, as client-go does: the kubelet rotates it about hourly.
  std::chrono::milliseconds token_reread{60000};
  // The clock token_reread is measured on (tests: a fake one; null: std::chrono::steady_clock).
  std::function<std::chrono::steady_clock::time_point()> steady_now;
  // Called after every HTTP exchange (watches included) with its method, path and status (0: a
  // transport error): the controller counts requests by verb and code with it.
  std::function<void(const std::string& method, const std::string& path, long status)> on_exchange;
};

// An HTTP response: status and body.
struct HttpResponse {
  long status = 0;
  std::string body;
};

// A Kubernetes API client over libcurl: TLS verified against the cluster CA (or the
// system store), client certificates, bearer tokens (also from a rotating token file) and exec
// credential plugins (re-run when the credential expires or the server answers 401).
// Errors name the server, the request and the HTTP status with the API's own message.
class ApiClient {
 public:
  static Result<std::unique_ptr<ApiClient>> Create(ClusterAccess access, ClientOptions options);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // GET `path` (with its query); 2xx only, after bounded retries.
  Result<std::string> Get(const std::string& path);
  // `method` (PATCH, POST, PUT, ...) with a body of `content_type` (e.g.
  // "application/strategic-merge-patch+json"); 2xx only, same retries as Get; the response body.
  // A 409 Conflict is Unavailable with "conflict" in the message.
  Result<std::string> Send(const std::string& method, const std::string& path,
                           const std::string& body, const std::string& content_type);

  // Lists a collection (e.g. "/api/v1/pods", or with its own query such as a fieldSelector)
  // page by page with limit/continue, decoding every
  // page into `out` (which must be a `<kind>List`). A continue token that expired (410) restarts
  // the list once without pagination, as client-go's pager does.
  // `resource_version`, when given, receives the list's metadata.resourceVersion (the version a
  // watch resumes from).
  Status List(const std::string& collection, const std::string& kind, Snapshot& out,
              std::string* resource_version = nullptr);

  // A watch (`path` carries watch=1 and its query): streams the response, calling `on_line` with
  // every complete line (one watch event each; at most `max_line` bytes, else an error) until
  // the server ends the response, `timeout` passes, `on_line` returns false, or `*stop` turns
  // true (checked about every second and on every byte received). One attempt, no retries (the
  // informer backs off); OK when the server ended the stream cleanly or `on_line` stopped it. A
  // non-2xx answer is an error naming the status (last_status() gives it: 410 means relist).
  // `on_open` is called once the server has answered 2xx (the watch is established).
  Status Watch(const std::string& path, std::chrono::milliseconds timeout,
               const std::function<bool(std::string_view line)>& on_line,
               const std::atomic<bool>* stop, const std::function<void()>& on_open = nullptr,
               size_t max_line = 16u << 20);

  // HTTP status of the last exchange (0: none, or a transport error).
  long last_status() const { return last_status_; }

  // Every request of this client (watches included) is aborted within about a second once
  // `*stop` turns true, and Send stops retrying; nullptr: never.
  void SetAbort(const std::atomic<bool>* stop);
  bool aborted() const { return abort_ != nullptr && abort_->load(); }
  // The bound of one request from now on.
  void SetRequestTimeout(std::chrono::milliseconds timeout);
  void SetAttempts(int attempts) { options_.attempts = attempts; }

  const ClusterAccess& access() const { return access_; }
  int requests() const { return requests_; }

 private:
  ApiClient(ClusterAccess access, ClientOptions options);
  Status RefreshCredential(bool force);
  std::chrono::steady_clock::time_point SteadyNow() const;
  // Before each request: an exec credential about to expire is renewed, a token file re-read.
  Status PrepareCredential();
  // token_ from access_.token_file (a failed read keeps the token there was, as client-go).
  Status ReadTokenFile();
  // Performs the request set up on the handle, with the headers every request carries (and
  // Content-Type when given); errbuf: CURL_ERROR_SIZE bytes. A CURLcode.
  int Perform(const std::string& content_type, char* errbuf);
  // One attempt, no retries.
  Result<HttpResponse> Exchange(const std::string& method, const std::string& path,
                                const std::string& body, const std::string& content_type);
  Status DecodePages(const std::string& collection, const std::string& kind, int64_t limit,
                     Snapshot& out, bool& gone, std::string* resource_version);

  ClusterAccess access_;
  ClientOptions options_;
  void* curl_ = nullptr;  // CURL*
  // tls-server-name: requests go to https://<name>:<port> (SNI and certificate check), connected
  // to the server's own address (CURLOPT_CONNECT_TO), with the server's Host header, as client-go.
  std::string base_url_;        // the server URL requests are built on
  std::string host_header_;     // "Host: <server authority>", or empty
  void* connect_to_ = nullptr;  // curl_slist*
  std::string token_;
  std::optional<std::chrono::steady_clock::time_point> token_read_at_;
  std::string cert_pem_, key_pem_;
  std::optional<TimePoint> cred_expires_;
  std::optional<ExecCredential> exec_cred_;
  long last_status_ = 0;  // HTTP status of the last exchange (0: none)
  const std::atomic<bool>* abort_ = nullptr;
  int requests_ = 0;
};

// Lists the objects the audit reads (nodes, pods, daemonsets; all namespaces) into `out`, then
// GETs the ConfigMaps mounted by the DaemonSets `read_configs_of` accepts (a device plugin's
// config). A ConfigMap that is missing is skipped; one that cannot be read is named in
// out.load_errors (the audit goes on without it).
Status LoadCluster(ApiClient& client, Snapshot& out,
                   const std::function<bool(const DaemonSet&)>& read_configs_of = nullptr);

// Lists what `tocsin diff` compares (nodes, daemonsets, network attachments, SR-IOV node
// policies, NicClusterPolicies, Jobs, CronJobs, PyTorchJobs, MPIJobs, JobSets; all namespaces),
// then the device plugins' ConfigMaps as LoadCluster does. Custom resources that are not served
// (404) are skipped.
//
// `partial` (the controller's drift): kinds named in `partial->have` are not listed (the caller
// has them already: its informers' caches), and a kind whose list fails (403 without the opt-in
// RBAC, a 5xx) is named in `partial->unreadable` with why, its objects dropped, and the rest
// still listed; the call then fails only when it is aborted.
struct FabricLoad {
  std::vector<std::string> have;
  std::vector<std::pair<std::string, std::string>> unreadable;  // kind, the error
};
Status LoadFabric(ApiClient& client, Snapshot& out,
                  const std::function<bool(const DaemonSet&)>& read_configs_of = nullptr,
                  FabricLoad* partial = nullptr);

// The error text of a Kubernetes Status body ({"kind":"Status","message":...}), or a short
// excerpt of any other body.
std::string ApiErrorText(const std::string& body);

}  // namespace tocsin::k8s

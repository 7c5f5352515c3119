#include "k8s/api_client.h"

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "base/strings.h"
#include "k8s/curl_api.h"
#include "sys/env.h"
#include "tocsin/version.h"

namespace tocsin::k8s {
namespace {

struct Sink {
  std::string* body;
  size_t max;
  bool overflow = false;
};

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t bytes = size * n;
  if (sink->body->size() + bytes > sink->max) {
    sink->overflow = true;
    return 0;  // makes curl fail the transfer
  }
  sink->body->append(data, bytes);
  return bytes;
}

// libcurl, loaded by ApiClient::Create before any other call here.
const CurlApi& Curl() { return **LoadCurl(); }

bool Retryable(long status) { return status == 429 || status >= 500; }

int AbortProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* stop = static_cast<const std::atomic<bool>*>(user);
  return stop != nullptr && stop->load() ? 1 : 0;  // non-zero aborts the transfer
}

std::string Duration(std::chrono::milliseconds ms) {
  return ms.count() % 1000 == 0 ? std::to_string(ms.count() / 1000) + " s"
                                : std::to_string(ms.count()) + " ms";
}

// "https://host:port/prefix" in parts; the port defaults to the scheme's.
struct ServerUrl {
  std::string scheme, authority, host, port, prefix;
};
std::optional<ServerUrl> SplitServer(const std::string& server) {
  ServerUrl u;
  size_t colon = server.find("://");
  if (colon == std::string::npos) return std::nullopt;
  u.scheme = server.substr(0, colon);
  size_t start = colon + 3;
  size_t slash = server.find('/', start);
  u.authority =
      server.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
  u.prefix = slash == std::string::npos ? "" : server.substr(slash);
  size_t host_end = u.authority.rfind(':');
  size_t bracket = u.authority.rfind(']');  // [fd00::1]:6443
  if (host_end != std::string::npos && (bracket == std::string::npos || host_end > bracket)) {
    u.host = u.authority.substr(0, host_end);
    u.port = u.authority.substr(host_end + 1);
  } else {
    u.host = u.authority;
    u.port = u.scheme == "https" ? "443" : "80";
  }
  if (u.host.empty() || u.port.empty()) return std::nullopt;
  return u;
}

CURLcode SetBlob(CURL* c, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  return Curl().easy_setopt(c, option, &blob);
}

}  // namespace

std::string ApiErrorText(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.value("kind", "") == "Status") {
    std::string msg = j.value("message", "");
    std::string reason = j.value("reason", "");
    if (!msg.empty()) return msg;
    if (!reason.empty()) return reason;
  }
  std::string text(Trim(body));
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  return text;
}

ApiClient::ApiClient(ClusterAccess access, ClientOptions options)
    : access_(std::move(access)), options_(options) {}

ApiClient::~ApiClient() {
  if (curl_ != nullptr) Curl().easy_cleanup(static_cast<CURL*>(curl_));
  if (connect_to_ != nullptr) Curl().slist_free_all(static_cast<curl_slist*>(connect_to_));
}

Result<std::unique_ptr<ApiClient>> ApiClient::Create(ClusterAccess access, ClientOptions options) {
  if (auto curl = LoadCurl(); !curl.ok()) return curl.status();
  if (!access.server.starts_with("https://") && !access.server.starts_with("http://")) {
    return Status::InvalidArgument(access.origin + ": server \"" + access.server +
                                   "\" is not an http(s) URL");
  }
  std::unique_ptr<ApiClient> client(new ApiClient(std::move(access), options));
  CURL* c = Curl().easy_init();
  if (c == nullptr) return Status::Internal("curl_easy_init failed");
  client->curl_ = c;
  const ClusterAccess& a = client->access_;
  client->base_url_ = a.server;
  if (!a.tls_server_name.empty() && a.server.starts_with("https://")) {
    // Verify (and send SNI for) the name the kubeconfig gives, while connecting to the server's
    // address: client-go's TLSClientConfig.ServerName.
    auto url = SplitServer(a.server);
    const std::string& name = a.tls_server_name;
    if (!url || name.find_first_of(":/[] ") != std::string::npos) {
      return Status::InvalidArgument(a.origin + ": cannot use tls-server-name \"" + name +
                                     "\" with server \"" + a.server + "\"");
    }
    client->base_url_ = "https://" + name + ":" + url->port + url->prefix;
    client->host_header_ = "Host: " + url->authority;
    std::string route = name + ":" + url->port + ":" + url->host + ":" + url->port;
    client->connect_to_ = Curl().slist_append(nullptr, route.c_str());
    Curl().easy_setopt(c, CURLOPT_CONNECT_TO, client->connect_to_);
  }
  Curl().easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  Curl().easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
  Curl().easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout.count()));
  Curl().easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");  // gzip: lists shrink ~10x
  Curl().easy_setopt(c, CURLOPT_USERAGENT, (std::string("tocsin/") + kVersion).c_str());
  Curl().easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  Curl().easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  if (!a.ca_pem.empty() && SetBlob(c, CURLOPT_CAINFO_BLOB, a.ca_pem) != CURLE_OK) {
    return Status::Internal("libcurl cannot take a CA blob (needs libcurl >= 7.77)");
  }
  Curl().easy_setopt(c, CURLOPT_SSL_VERIFYPEER, a.insecure_skip_tls_verify ? 0L : 1L);
  Curl().easy_setopt(c, CURLOPT_SSL_VERIFYHOST, a.insecure_skip_tls_verify ? 0L : 2L);
  Status st = client->RefreshCredential(/*force=*/false);
  if (!st.ok()) return st;
  return client;
}

Status ApiClient::RefreshCredential(bool force) {
  CURL* c = static_cast<CURL*>(curl_);
  token_ = access_.token;
  cert_pem_ = access_.client_cert_pem;
  key_pem_ = access_.client_key_pem;
  if (!access_.token_file.empty()) {
    if (Status st = ReadTokenFile(); !st.ok()) return st;
  }
  if (access_.exec) {
    std::optional<ExecCredential>& cached = exec_cred_;  // one plugin run per expiry
    bool expired =
        cached && cached->expires && *cached->expires <= Clock::now() + std::chrono::seconds(30);
    if (!cached || expired || force) {
      auto cred = RunExecPlugin(*access_.exec, access_, std::chrono::seconds(60), abort_);
      if (!cred.ok()) return cred.status().WithPrefix(access_.origin);
      cached = *cred;
    }
    if (!cached->token.empty()) token_ = cached->token;
    if (!cached->client_cert_pem.empty()) {
      cert_pem_ = cached->client_cert_pem;
      key_pem_ = cached->client_key_pem;
    }
    cred_expires_ = cached->expires;
  }
  if (!cert_pem_.empty()) {
    Curl().easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    Curl().easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    if (SetBlob(c, CURLOPT_SSLCERT_BLOB, cert_pem_) != CURLE_OK ||
        SetBlob(c, CURLOPT_SSLKEY_BLOB, key_pem_) != CURLE_OK) {
      return Status::Internal("libcurl cannot take a client certificate blob");
    }
  }
  return Status::Ok();
}

Status ApiClient::ReadTokenFile() {
  token_read_at_ = SteadyNow();
  auto text = ReadRegularFile(access_.token_file, 1 << 20);
  if (!text.ok()) return text.status().WithPrefix(access_.origin + ": token file");
  token_ = std::string(Trim(*text));
  return Status::Ok();
}

Result<HttpResponse> ApiClient::Exchange(const std::string& method, const std::string& path,
                                         const std::string& body, const std::string& content_type) {
  CURL* c = static_cast<CURL*>(curl_);
  HttpResponse resp;
  Sink sink{&resp.body, options_.max_body};
  std::string url = access_.server + path;  // what errors name
  std::string target = base_url_ + path;
  Curl().easy_setopt(c, CURLOPT_URL, target.c_str());
  Curl().easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteBody);
  Curl().easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  if (method == "GET") {
    Curl().easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
    Curl().easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    Curl().easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    Curl().easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    Curl().easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  auto rc = static_cast<CURLcode>(Perform(method != "GET" ? content_type : "", errbuf));
  if (method != "GET") {
    Curl().easy_setopt(c, CURLOPT_CUSTOMREQUEST, nullptr);
    Curl().easy_setopt(c, CURLOPT_HTTPGET, 1L);  // also forgets POSTFIELDS
  }
  long status = 0;
  if (rc == CURLE_OK) Curl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (options_.on_exchange) options_.on_exchange(method, path, status);
  std::string where = method + " " + url;
  if (sink.overflow) {
    return Status::IoError(where + ": response larger than " + std::to_string(options_.max_body) +
                           " bytes");
  }
  if (rc != CURLE_OK) {
    std::string detail = errbuf[0] ? errbuf : Curl().easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return Status::Timeout(where + ": no complete answer within " +
                             Duration(options_.request_timeout) + " (" + detail + ")");
    }
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
        rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CONNECT_ERROR) {
      return Status::InvalidArgument(where + ": TLS: " + detail);
    }
    return Status::Unavailable(where + ": " + detail);
  }
  resp.status = status;
  return resp;
}

Result<std::string> ApiClient::Get(const std::string& path) { return Send("GET", path, "", ""); }

int ApiClient::Perform(const std::string& content_type, char* errbuf) {
  CURL* c = static_cast<CURL*>(curl_);
  curl_slist* headers = Curl().slist_append(nullptr, "Accept: application/json");
  std::string type = "Content-Type: " + content_type;
  if (!content_type.empty()) headers = Curl().slist_append(headers, type.c_str());
  std::string auth = "Authorization: Bearer " + token_;
  if (!token_.empty()) headers = Curl().slist_append(headers, auth.c_str());
  if (!host_header_.empty()) headers = Curl().slist_append(headers, host_header_.c_str());
  Curl().easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  Curl().easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  ++requests_;
  CURLcode rc = Curl().easy_perform(c);
  Curl().slist_free_all(headers);
  Curl().easy_setopt(c, CURLOPT_HTTPHEADER, nullptr);
  Curl().easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  return rc;
}

void ApiClient::SetAbort(const std::atomic<bool>* stop) {
  CURL* c = static_cast<CURL*>(curl_);
  abort_ = stop;
  Curl().easy_setopt(c, CURLOPT_NOPROGRESS, stop ? 0L : 1L);
  Curl().easy_setopt(c, CURLOPT_XFERINFOFUNCTION, stop ? AbortProgress : nullptr);
  Curl().easy_setopt(c, CURLOPT_XFERINFODATA, stop);
}

void ApiClient::SetRequestTimeout(std::chrono::milliseconds timeout) {
  options_.request_timeout = timeout;
  options_.connect_timeout = std::min(options_.connect_timeout, timeout);
  CURL* c = static_cast<CURL*>(curl_);
  Curl().easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  Curl().easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
}

std::chrono::steady_clock::time_point ApiClient::SteadyNow() const {
  return options_.steady_now ? options_.steady_now() : std::chrono::steady_clock::now();
}

Status ApiClient::PrepareCredential() {
  if (access_.exec && cred_expires_ && *cred_expires_ <= Clock::now() + std::chrono::seconds(30)) {
    if (Status st = RefreshCredential(false); !st.ok()) return st;
  }
  if (!access_.token_file.empty() && SteadyNow() - *token_read_at_ >= options_.token_reread) {
    (void)ReadTokenFile();  // rotated meanwhile, or gone for a moment: the old token is kept
  }
  return Status::Ok();
}

Result<std::string> ApiClient::Send(const std::string& method, const std::string& path,
                                    const std::string& body, const std::string& content_type) {
  auto backoff = options_.backoff;
  bool reauthenticated = false;
  Status last;
  for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
    if (abort_ != nullptr && abort_->load()) {
      return Status::Unavailable(method + " " + access_.server + path + ": stopped");
    }
    if (Status st = PrepareCredential(); !st.ok()) return st;
    auto r = Exchange(method, path, body, content_type);
    last_status_ = r.ok() ? r->status : 0;
    std::string where = method + " " + access_.server + path;
    if (r.ok() && r->status >= 200 && r->status < 300) return std::move(r->body);
    if (r.ok() && r->status == 401 && !reauthenticated &&
        (access_.exec || !access_.token_file.empty())) {
      // The plugin's credential may have been revoked early, the token file rotated: ask the
      // plugin again or read the file again, once.
      reauthenticated = true;
      if (Status st = RefreshCredential(true); !st.ok()) return st;
      --attempt;
      continue;
    }
    if (r.ok()) {
      std::string text = "HTTP " + std::to_string(r->status) + ": " + ApiErrorText(r->body);
      if (!Retryable(r->status)) {
        if (r->status == 401) {
          return Status::InvalidArgument(where + ": " + text + " (credentials from " +
                                         access_.origin + " were not accepted)");
        }
        if (r->status == 403) {
          return Status::InvalidArgument(where + ": " + text +
                                         " (the rights each component needs: "
                                         "deploy/rbac/audit.yaml, deploy/agent/rbac.yaml, "
                                         "deploy/controller/rbac.yaml)");
        }
        if (r->status == 404) return Status::NotFound(where + ": " + text);
        if (r->status == 409) return Status::Unavailable(where + ": conflict: " + text);
        return Status::InvalidArgument(where + ": " + text);
      }
      last = Status::Unavailable(where + ": " + text);
    } else {
      if (r.status().code() == StatusCode::kInvalidArgument) return r.status();  // TLS
      last = r.status();
    }
    if (attempt < options_.attempts) {
      auto until = std::chrono::steady_clock::now() + backoff;
      while (std::chrono::steady_clock::now() < until && !(abort_ && abort_->load())) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
  }
  return options_.attempts == 1
             ? last
             : last.WithPrefix("after " + std::to_string(options_.attempts) + " attempts");
}

Status ApiClient::DecodePages(const std::string& collection, const std::string& kind, int64_t limit,
                              Snapshot& out, bool& gone, std::string* resource_version) {
  CURL* c = static_cast<CURL*>(curl_);
  std::string cont;
  int page = 0;
  do {
    std::string path = collection;
    if (limit > 0) {
      path += (collection.find('?') == std::string::npos ? "?limit=" : "&limit=") +
              std::to_string(limit);
    }
    if (!cont.empty()) {
      char* esc = Curl().easy_escape(c, cont.c_str(), static_cast<int>(cont.size()));
      path += std::string("&continue=") + esc;
      Curl().free(esc);
    }
    auto body = Get(path);
    if (!body.ok()) {
      if (page > 0 && last_status_ == 410) {
        gone = true;
        return Status::Ok();
      }
      return body.status();
    }
    ListMeta meta;
    std::string source = access_.server + path;
    Status st = DecodeJson(*body, source, out, &meta);
    if (!st.ok()) return st;
    if (meta.kind != kind + "List") {
      return Status::ParseError("GET " + source + ": answered kind \"" + meta.kind + "\", want " +
                                kind + "List");
    }
    if (page == 0 && resource_version != nullptr) *resource_version = meta.resource_version;
    cont = meta.continue_token;
    ++page;
  } while (!cont.empty());
  return Status::Ok();
}

Status ApiClient::List(const std::string& collection, const std::string& kind, Snapshot& out,
                       std::string* resource_version) {
  SnapshotMark mark(out);
  bool gone = false;
  Status st = DecodePages(collection, kind, options_.page_size, out, gone, resource_version);
  if (!st.ok() || !gone) return st;
  // The continue token expired mid-list: drop this resource's pages and list it whole.
  mark.Restore(out);
  return DecodePages(collection, kind, 0, out, gone, resource_version);
}

}  // namespace tocsin::k8s

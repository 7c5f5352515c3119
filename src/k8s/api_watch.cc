// ApiClient::Watch: one streamed watch request (the rest of the client is in api_client.cc).
#include <algorithm>

#include "k8s/api_client.h"
#include "k8s/curl_api.h"

namespace tocsin::k8s {
namespace {

const CurlApi& Curl() { return **LoadCurl(); }

// Splits the response into lines for `on_line`; a non-2xx answer is kept (bounded) for the error.
struct LineSink {
  CURL* curl;
  const std::function<bool(std::string_view)>* on_line;
  size_t max_line;
  std::string buffer;
  std::string error_body;
  bool too_long = false;
  bool stopped_by_callback = false;
  bool error_status = false;
  bool status_known = false;
};

size_t WriteLines(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<LineSink*>(user);
  size_t bytes = size * n;
  if (!sink->status_known) {
    long status = 0;
    Curl().easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    sink->error_status = status < 200 || status >= 300;
    sink->status_known = true;
  }
  if (sink->error_status) {
    size_t room = (64u << 10) - std::min<size_t>(sink->error_body.size(), 64u << 10);
    sink->error_body.append(data, std::min(bytes, room));
    return bytes;
  }
  std::string_view chunk(data, bytes);
  while (!chunk.empty()) {
    size_t nl = chunk.find('\n');
    std::string_view part = chunk.substr(0, nl);
    if (sink->buffer.size() + part.size() > sink->max_line) {
      sink->too_long = true;
      return 0;  // fails the transfer
    }
    sink->buffer.append(part);
    if (nl == std::string_view::npos) break;
    chunk.remove_prefix(nl + 1);
    if (!sink->buffer.empty() && !(*sink->on_line)(sink->buffer)) {
      sink->stopped_by_callback = true;
      return 0;
    }
    sink->buffer.clear();
  }
  return bytes;
}

// The end of the headers: the watch is established when the answer is 2xx.
struct HeaderSink {
  CURL* curl;
  const std::function<void()>* on_open;
};
size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<HeaderSink*>(user);
  size_t bytes = size * n;
  bool blank = bytes <= 2 && (bytes == 0 || data[0] == '\r' || data[0] == '\n');
  if (blank && sink->on_open != nullptr && *sink->on_open) {  // a blank line ends the headers
    long status = 0;
    Curl().easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) (*sink->on_open)();
  }
  return bytes;
}

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* stop = static_cast<const std::atomic<bool>*>(user);
  return stop != nullptr && stop->load() ? 1 : 0;  // non-zero aborts the transfer
}

}  // namespace

Status ApiClient::Watch(const std::string& path, std::chrono::milliseconds timeout,
                        const std::function<bool(std::string_view line)>& on_line,
                        const std::atomic<bool>* stop, const std::function<void()>& on_open,
                        size_t max_line) {
  if (Status st = PrepareCredential(); !st.ok()) return st;
  CURL* c = static_cast<CURL*>(curl_);
  LineSink sink{c, &on_line, max_line, {}, {}, false, false, false, false};
  std::string url = access_.server + path;
  std::string target = base_url_ + path;
  Curl().easy_setopt(c, CURLOPT_URL, target.c_str());
  Curl().easy_setopt(c, CURLOPT_HTTPGET, 1L);
  Curl().easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteLines);
  Curl().easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  Curl().easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  Curl().easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  HeaderSink headers_sink{c, &on_open};
  Curl().easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  Curl().easy_setopt(c, CURLOPT_HEADERDATA, &headers_sink);
  Curl().easy_setopt(c, CURLOPT_XFERINFOFUNCTION, Progress);
  Curl().easy_setopt(c, CURLOPT_XFERINFODATA, stop);
  // A peer that vanished (a node or a network path gone) is noticed by TCP keepalive within
  // about two minutes (30 s idle, then the kernel's 9 probes 10 s apart); a quiet watch is
  // normal (1.20 sends its only bookmark near the end), so no byte rate is required.
  Curl().easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  Curl().easy_setopt(c, CURLOPT_TCP_KEEPIDLE, 30L);
  Curl().easy_setopt(c, CURLOPT_TCP_KEEPINTVL, 10L);
  char errbuf[CURL_ERROR_SIZE] = {0};
  auto rc = static_cast<CURLcode>(Perform("", errbuf));
  Curl().easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  Curl().easy_setopt(c, CURLOPT_HEADERFUNCTION, nullptr);
  Curl().easy_setopt(c, CURLOPT_HEADERDATA, nullptr);
  SetAbort(abort_);  // the client's own abort flag again (or none)
  long status = 0;
  Curl().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  last_status_ = status;
  if (options_.on_exchange) options_.on_exchange("GET", path, rc == CURLE_OK || status ? status : 0);
  std::string where = "GET " + url;
  if (sink.stopped_by_callback) return Status::Ok();
  if (sink.too_long) {
    return Status::IoError(where + ": a watch event longer than " + std::to_string(max_line) +
                           " bytes");
  }
  if (sink.error_status || (rc == CURLE_OK && (status < 200 || status >= 300))) {
    std::string text = "HTTP " + std::to_string(status) + ": " + ApiErrorText(sink.error_body);
    if (status == 401 && (access_.exec || !access_.token_file.empty())) {
      (void)RefreshCredential(true);  // the next watch goes with a fresh credential
    }
    if (status == 403 || status == 401) return Status::InvalidArgument(where + ": " + text);
    if (status == 404) return Status::NotFound(where + ": " + text);
    return Status::Unavailable(where + ": " + text);
  }
  if (rc == CURLE_ABORTED_BY_CALLBACK) return Status::Unavailable(where + ": stopped");
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Status::Timeout(where + ": the watch outlived its " +
                           std::to_string(timeout.count()) + " ms bound");
  }
  if (rc != CURLE_OK) {
    return Status::Unavailable(where + ": " +
                               (errbuf[0] ? std::string(errbuf) : Curl().easy_strerror(rc)));
  }
  return Status::Ok();
}

}  // namespace tocsin::k8s

#include "agent/metrics_server.h"

#include <civetweb.h>
#include <netdb.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace tocsin::agent {
namespace {

// A civetweb worker serves one connection at a time, for as long as it is open: with 4 workers
// and a 10 s request timeout, six idle connections (anyone who can reach the port) held /healthz
// down past the liveness probe's timeout. Enough workers for scrapers and probes with room to
// spare (a thread costs little), a header that must arrive within 2 s and keep-alive connections
// closed after 5 s idle (Prometheus scrapes every 15 s or more: it reconnects anyway).
constexpr const char* kServerThreads = "16";
constexpr const char* kRequestTimeoutMs = "2000";
constexpr const char* kKeepAliveTimeoutMs = "5000";

// One complete response: status, type, Content-Length, body (keep-alive friendly).
void Respond(mg_connection* conn, int status, const char* type, const std::string& body) {
  mg_response_header_start(conn, status);
  mg_response_header_add(conn, "Content-Type", type, -1);
  mg_response_header_add(conn, "Content-Length", std::to_string(body.size()).c_str(), -1);
  mg_response_header_send(conn);
  mg_write(conn, body.data(), body.size());
}

int QuietLog(const mg_connection*, const char*) { return 1; }  // no access/error log spam

// Why `host:port` cannot be listened on, found by binding it once more: civetweb only says that
// it could not ("address already in use", "permission denied" for a port below 1024, ...).
std::string ListenCause(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(), &hints,
                       &res);
  if (rc != 0) return std::string("cannot resolve the address: ") + gai_strerror(rc);
  std::string cause = "the address was free when tried again";
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    cause = strerror(errno);
  } else {
    int one = 1;  // as civetweb
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
      cause = errno == EADDRINUSE ? "address already in use (another process listens there)"
                                  : strerror(errno);
    }
    close(fd);
  }
  freeaddrinfo(res);
  return cause;
}

}  // namespace

MetricsServer::MetricsServer(std::shared_ptr<prometheus::Registry> registry, std::string daemon,
                             std::string not_ready)
    : registry_(std::move(registry)), not_ready_(std::move(not_ready)) {
  scrapes_ = &prometheus::BuildCounter()
                  .Name("tocsin_" + daemon + "_scrapes_total")
                  .Help("Scrapes of /metrics served by this " + daemon + ".")
                  .Register(*registry_)
                  .Add({});
  scrape_seconds_ = &prometheus::BuildHistogram()
                         .Name("tocsin_" + daemon + "_scrape_duration_seconds")
                         .Help("Time to render /metrics.")
                         .Register(*registry_)
                         .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.005,
                                                                          0.01, 0.05, 0.1, 0.5, 1});
}

MetricsServer::~MetricsServer() { Stop(); }

std::string MetricsServer::Render() {
  auto start = std::chrono::steady_clock::now();
  scrapes_->Increment();
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (const auto& c : collectables_) {
    auto more = c->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()),
                    std::make_move_iterator(more.end()));
  }
  std::string text = prometheus::TextSerializer().Serialize(families);
  scrape_seconds_->Observe(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return text;
}

void MetricsServer::AddCollectable(std::shared_ptr<prometheus::Collectable> collectable) {
  collectables_.push_back(std::move(collectable));
}

int MetricsServer::Handle(mg_connection* conn, void* self_ptr) {
  auto* self = static_cast<MetricsServer*>(self_ptr);
  const mg_request_info* req = mg_get_request_info(conn);
  std::string uri = req->local_uri ? req->local_uri : "";
  if (std::strcmp(req->request_method, "GET") != 0 &&
      std::strcmp(req->request_method, "HEAD") != 0) {
    Respond(conn, 405, "text/plain", "only GET\n");
    return 405;
  }
  if (uri == "/metrics") {
    Respond(conn, 200, "text/plain; version=0.0.4; charset=utf-8", self->Render());
    return 200;
  }
  if (uri == "/healthz") {
    Respond(conn, 200, "text/plain", "ok\n");
    return 200;
  }
  if (uri == "/readyz") {
    bool ready = self->ready_.load();
    Respond(conn, ready ? 200 : 503, "text/plain",
            ready ? "ready\n" : "not ready: " + self->not_ready_ + "\n");
    return ready ? 200 : 503;
  }
  Respond(conn, 404, "text/plain", "not found: /metrics, /healthz, /readyz\n");
  return 404;
}

Status MetricsServer::Start(const std::string& host, int port) {
  static std::once_flag once;
  std::call_once(once, [] { mg_init_library(0); });
  std::string listen =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  const char* options[] = {"listening_ports",
                           listen.c_str(),
                           "num_threads",
                           kServerThreads,
                           "enable_keep_alive",
                           "yes",
                           "tcp_nodelay",
                           "1",
                           "request_timeout_ms",
                           kRequestTimeoutMs,
                           "keep_alive_timeout_ms",
                           kKeepAliveTimeoutMs,
                           nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = QuietLog;
  host_ = host;
  ctx_ = mg_start(&callbacks, this, options);
  if (ctx_ == nullptr) {
    return Status::Unavailable("cannot listen on " + listen + ": " + ListenCause(host, port));
  }
  mg_set_request_handler(ctx_, "/", &MetricsServer::Handle, this);
  mg_server_port ports[4] = {};
  int n = mg_get_server_ports(ctx_, 4, ports);
  port_ = n > 0 ? ports[0].port : -1;
  if (port_ <= 0) {
    Stop();
    return Status::Unavailable("cannot listen on " + listen + ": no port");
  }
  return Status::Ok();
}

void MetricsServer::Stop() {
  if (ctx_ == nullptr) return;
  // civetweb's listener polls in 2 s quanta (SOCKET_TIMEOUT_QUANTUM) before it sees the stop
  // flag: a connection to ourselves wakes it, so the agent stops within its one-second budget.
  mg_context* ctx = ctx_;
  ctx_ = nullptr;
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread stopper([ctx, done] {
    mg_stop(ctx);
    done->store(true);
  });
  std::string host = host_ == "0.0.0.0" || host_.empty() ? "127.0.0.1"
                     : host_ == "::"                     ? "::1"
                                                         : host_;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port_).c_str(), &hints, &res) == 0) {
    // Until the listener has seen the flag (a connection before the flag is just served).
    for (int i = 0; i < 60 && !done->load(); ++i) {
      int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0) {
        (void)!connect(fd, res->ai_addr, res->ai_addrlen);
        close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    freeaddrinfo(res);
  }
  stopper.join();
}

}  // namespace tocsin::agent

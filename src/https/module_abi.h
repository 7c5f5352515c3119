#pragma once

// What the HTTPS server module (tocsin-https.so) and the binary that loads it share. Both come
// from the same build with the same compiler and standard library, so C++ types cross: this
// header holds no tocsin library type, only the standard library's.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace tocsin::https {

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

struct ServerOptions {
  std::string host;  // listen address and port (a port must be given: 0 is refused)
  int port = 0;
  std::string cert_file;  // PEM certificate chain, leaf first; re-read when it changes
  std::string key_file;   // PEM private key
  std::string cert_flag = "--tls-cert-file";  // how errors name the files
  std::string key_flag = "--tls-private-key-file";
  std::string post_path = "/validate";  // the one route: POST
  size_t max_body = 0;                  // larger requests get HTTP 413
  std::chrono::seconds read_timeout{2};
  // Answers a POST body; runs on the server's worker threads, concurrently.
  std::function<Response(std::string_view body)> handler;
};

// A running server: serves from threads of its own until Stop() (or destruction).
class Server {
 public:
  virtual ~Server() = default;
  virtual void Stop() = 0;
};

// Why a start failed: kInput for what the user gave (a certificate or key that does not load
// or match), kUnavailable for the host (the port cannot be bound, no TLS context).
enum class StartError { kNone, kInput, kUnavailable };

// The module's one entry point, resolved by name: nullptr and *error/*message when it failed.
inline constexpr char kStartSymbol[] = "tocsin_https_start_v1";
using StartFn = Server* (*)(const ServerOptions& options, StartError* error, std::string* message);

}  // namespace tocsin::https

// tocsin-https.so: the HTTPS server (cpp-httplib over OpenSSL), loaded by https::StartServer
// only where a command serves HTTPS. It links no tocsin library: see module_abi.h.

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

#include "https/module_abi.h"

namespace tocsin::https {
namespace {

// The serving certificate and key, loaded from their files, re-read (at most once a second)
// when either changed, and kept when the new pair does not load or match (rotation writes the
// two files one after the other).
class Certificates {
 public:
  explicit Certificates(const ServerOptions& o) : o_(o) {}
  ~Certificates() { Free(); }

  // Loads the pair now; "" or why not, naming the flag, the file and OpenSSL's reason.
  std::string Load() {
    std::lock_guard<std::mutex> lock(mu_);
    return LoadLocked();
  }

  // Sets the current pair on a connection (re-reading the files when they changed).
  bool Use(SSL* ssl) {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (now - checked_ >= std::chrono::seconds(1)) {
      checked_ = now;
      if (Stamp() != stamp_) (void)LoadLocked();
    }
    if (cert_x509_ == nullptr) return false;
    return SSL_use_cert_and_key(ssl, cert_x509_, key_pkey_, chain_, 1) == 1;
  }

 private:
  std::string Stamp() const {
    std::string s;
    for (const auto* path : {&o_.cert_file, &o_.key_file}) {
      struct stat st {};
      if (stat(path->c_str(), &st) == 0) {
        s += std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
             std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
      }
    }
    return s;
  }

  static std::string SslError() {
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "no PEM data";
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    return buf;
  }

  std::string LoadLocked() {
    std::string stamp = Stamp();
    const std::string cert = o_.cert_flag + " " + o_.cert_file;
    BIO* bio = BIO_new_file(o_.cert_file.c_str(), "r");
    if (bio == nullptr) return cert + ": " + SslError();
    X509* leaf = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    STACK_OF(X509)* chain = sk_X509_new_null();
    while (leaf != nullptr) {
      X509* next = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      if (next == nullptr) break;
      sk_X509_push(chain, next);
    }
    ERR_clear_error();  // the end of the file reads as an error
    BIO_free(bio);
    if (leaf == nullptr) {
      sk_X509_pop_free(chain, X509_free);
      return cert + ": no PEM certificate";
    }
    bio = BIO_new_file(o_.key_file.c_str(), "r");
    EVP_PKEY* pkey =
        bio == nullptr ? nullptr : PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    if (bio != nullptr) BIO_free(bio);
    std::string error;
    if (pkey == nullptr) {
      error = o_.key_flag + " " + o_.key_file + ": " + SslError();
    } else if (X509_check_private_key(leaf, pkey) != 1) {
      ERR_clear_error();
      error = o_.key_flag + " " + o_.key_file + " does not match the certificate of " + cert;
    }
    if (!error.empty()) {
      X509_free(leaf);
      EVP_PKEY_free(pkey);
      sk_X509_pop_free(chain, X509_free);
      return error;
    }
    Free();
    cert_x509_ = leaf;
    key_pkey_ = pkey;
    chain_ = chain;
    stamp_ = stamp;
    return "";
  }

  void Free() {
    X509_free(cert_x509_);
    EVP_PKEY_free(key_pkey_);
    if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
    cert_x509_ = nullptr;
    key_pkey_ = nullptr;
    chain_ = nullptr;
  }

  const ServerOptions o_;
  std::mutex mu_;
  std::string stamp_;
  std::chrono::steady_clock::time_point checked_{};
  X509* cert_x509_ = nullptr;
  EVP_PKEY* key_pkey_ = nullptr;
  STACK_OF(X509)* chain_ = nullptr;
};

int CertCallback(SSL* ssl, void* arg) {
  return static_cast<Certificates*>(arg)->Use(ssl) ? 1 : 0;
}

class HttplibServer final : public Server {
 public:
  ~HttplibServer() override { Stop(); }

  StartError Start(const ServerOptions& o, std::string* message) {
    certs_ = std::make_unique<Certificates>(o);
    if (std::string e = certs_->Load(); !e.empty()) {
      *message = e;
      return StartError::kInput;
    }
    Certificates* certs = certs_.get();
    server_ = std::make_unique<httplib::SSLServer>([certs](SSL_CTX& ctx) {
      SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
      SSL_CTX_set_cert_cb(&ctx, CertCallback, certs);
      return true;
    });
    if (!server_->is_valid()) {
      *message = "no TLS context";
      return StartError::kUnavailable;
    }
    server_->set_payload_max_length(o.max_body);
    server_->set_read_timeout(o.read_timeout);
    // An API server keeps its connections: many requests each, no Nagle delay on the answer;
    // an idle one closed after a second, so that Stop (which waits for them) is quick.
    server_->set_tcp_nodelay(true);
    server_->set_keep_alive_max_count(100000);
    server_->set_keep_alive_timeout(1);
    server_->Post(o.post_path, [handler = o.handler](const httplib::Request& req,
                                                     httplib::Response& res) {
      Response r = handler(req.body);
      res.status = r.status;
      res.set_content(r.body, r.content_type);
    });
    if (!server_->bind_to_port(o.host, o.port)) {
      *message = "cannot listen on " + o.host + ":" + std::to_string(o.port);
      return StartError::kUnavailable;
    }
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // cpp-httplib's stop() does nothing until the accept loop runs: a Stop right after Start
    // (a SIGTERM during start-up) would wait forever. Bound and listening already, the loop
    // starts at once; at most 5 s for a thread the system is slow to schedule.
    for (int i = 0; i < 5000 && !server_->is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return StartError::kNone;
  }

  void Stop() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::unique_ptr<Certificates> certs_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::thread thread_;
};

}  // namespace
}  // namespace tocsin::https

extern "C" __attribute__((visibility("default"))) tocsin::https::Server* tocsin_https_start_v1(
    const tocsin::https::ServerOptions& options, tocsin::https::StartError* error,
    std::string* message) {
  using tocsin::https::StartError;
  if (options.port <= 0 || !options.handler || options.max_body == 0) {
    *error = StartError::kInput;
    *message = "an HTTPS server needs a port, a handler and a body limit";
    return nullptr;
  }
  auto server = std::make_unique<tocsin::https::HttplibServer>();
  *error = server->Start(options, message);
  if (*error != StartError::kNone) return nullptr;
  return server.release();
}

extern "C" __attribute__((visibility("default"))) const char* tocsin_module_build_id() {
  return TOCSIN_MODULE_ID;
}

static_assert(std::is_same_v<decltype(&tocsin_https_start_v1), tocsin::https::StartFn>);

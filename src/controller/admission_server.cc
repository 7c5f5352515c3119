#include "controller/admission_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "audit/catalog.h"
#include "audit/jobs.h"
#include "base/strings.h"
#include "k8s/admission.h"

namespace tocsin::controller {

// The serving certificate and key, loaded from their files, re-read when they change.
class AdmissionServer::Certificates {
 public:
  Certificates(std::string cert, std::string key) : cert_(std::move(cert)), key_(std::move(key)) {}
  ~Certificates() { Free(); }

  // Loads the pair now; an error names the file and OpenSSL's reason.
  Status Load() {
    std::lock_guard<std::mutex> lock(mu_);
    return LoadLocked();
  }

  // Sets the current pair on a connection (re-reading the files when they changed).
  bool Use(SSL* ssl) {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    if (now - checked_ >= std::chrono::seconds(1)) {
      checked_ = now;
      if (Stamp() != stamp_) (void)LoadLocked();  // a failed reload keeps the old pair
    }
    if (cert_x509_ == nullptr) return false;
    return SSL_use_cert_and_key(ssl, cert_x509_, key_pkey_, chain_, 1) == 1;
  }

 private:
  std::string Stamp() const {
    std::string s;
    for (const auto* path : {&cert_, &key_}) {
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

  Status LoadLocked() {
    std::string stamp = Stamp();
    BIO* bio = BIO_new_file(cert_.c_str(), "r");
    if (bio == nullptr) return Status::NotFound("--tls-cert-file " + cert_ + ": " + SslError());
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
      return Status::InvalidArgument("--tls-cert-file " + cert_ + ": no PEM certificate");
    }
    bio = BIO_new_file(key_.c_str(), "r");
    EVP_PKEY* pkey =
        bio == nullptr ? nullptr : PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    if (bio != nullptr) BIO_free(bio);
    Status st = Status::Ok();
    if (pkey == nullptr) {
      st = Status::InvalidArgument("--tls-private-key-file " + key_ + ": " + SslError());
    } else if (X509_check_private_key(leaf, pkey) != 1) {
      ERR_clear_error();
      st = Status::InvalidArgument("--tls-private-key-file " + key_ +
                                   " does not match the certificate of --tls-cert-file " + cert_);
    }
    if (!st.ok()) {
      X509_free(leaf);
      EVP_PKEY_free(pkey);
      sk_X509_pop_free(chain, X509_free);
      return st;
    }
    Free();
    cert_x509_ = leaf;
    key_pkey_ = pkey;
    chain_ = chain;
    stamp_ = stamp;
    return Status::Ok();
  }

  void Free() {
    X509_free(cert_x509_);
    EVP_PKEY_free(key_pkey_);
    if (chain_ != nullptr) sk_X509_pop_free(chain_, X509_free);
    cert_x509_ = nullptr;
    key_pkey_ = nullptr;
    chain_ = nullptr;
  }

  std::string cert_, key_;
  std::mutex mu_;
  std::string stamp_;
  std::chrono::steady_clock::time_point checked_{};
  X509* cert_x509_ = nullptr;
  EVP_PKEY* key_pkey_ = nullptr;
  STACK_OF(X509)* chain_ = nullptr;
};

namespace {

int CertCallback(SSL* ssl, void* arg) {
  return static_cast<AdmissionServer::Certificates*>(arg)->Use(ssl) ? 1 : 0;
}

}  // namespace

AdmissionServer::AdmissionServer(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)) {
  requests_ = &prometheus::BuildCounter()
                   .Name("tocsin_controller_admission_requests_total")
                   .Help("AdmissionReviews answered, by result: allowed, warned, denied, "
                         "invalid (not a review: HTTP 400).")
                   .Register(*registry_);
  warnings_ = &prometheus::BuildCounter()
                   .Name("tocsin_controller_admission_warnings_total")
                   .Help("Warnings (or denials) sent back at admission, by check id.")
                   .Register(*registry_);
  seconds_ = &prometheus::BuildHistogram()
                  .Name("tocsin_controller_admission_duration_seconds")
                  .Help("Time to decode, check and answer one AdmissionReview.")
                  .Register(*registry_)
                  .Add({}, prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005,
                                                                   0.01, 0.02, 0.05, 0.1, 0.5});
}

AdmissionServer::~AdmissionServer() { Stop(); }

void AdmissionServer::SetContext(audit::Options options, std::string topology_label) {
  std::lock_guard<std::mutex> lock(mu_);
  audit_ = std::move(options);
  topology_ = std::move(topology_label);
}

std::pair<int, std::string> AdmissionServer::Review(std::string_view body) {
  auto start = std::chrono::steady_clock::now();
  auto done = [&](const char* result, int status, std::string text) {
    requests_->Add({{"result", result}}).Increment();
    seconds_->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return std::make_pair(status, std::move(text));
  };
  auto request = k8s::DecodeAdmissionReview(body);
  if (!request.ok()) return done("invalid", 400, request.status().message() + "\n");
  std::vector<std::string> warnings;
  std::vector<std::string> denied;
  const k8s::ObjectRef& job = request->job;
  if (request->has_object && k8s::IsJobKind(job.kind) && !job.owned && !job.finished) {
    std::vector<Finding> findings;
    {
      std::lock_guard<std::mutex> lock(mu_);
      findings = audit::CheckJobObject(job, audit_, topology_);
    }
    for (const auto& f : findings) {
      if (f.check == audit::kJobStorageNoSharedVolume) continue;  // not an admission check
      warnings_->Add({{"check", f.check}}).Increment();
      warnings.push_back(f.check + ": " + job.kind + " " + job.name + ": " + f.message);
      if (options_.deny.count(f.check)) denied.push_back(f.check);
    }
  }
  std::string deny;
  if (!denied.empty()) {
    deny = "denied by tocsin (--admission-deny): " + Join(denied, ", ");
  }
  return done(!deny.empty() ? "denied" : warnings.empty() ? "allowed" : "warned", 200,
              k8s::EncodeAdmissionResponse(request->uid, warnings, deny));
}

Status AdmissionServer::Start(const AdmissionOptions& options) {
  options_ = options;
  certs_ = std::make_unique<Certificates>(options.cert_file, options.key_file);
  TOCSIN_RETURN_IF_ERROR(certs_->Load());
  Certificates* certs = certs_.get();
  server_ = std::make_unique<httplib::SSLServer>([certs](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_cert_cb(&ctx, CertCallback, certs);
    return true;
  });
  if (!server_->is_valid()) return Status::Internal("--admission-listen: no TLS context");
  server_->set_payload_max_length(k8s::kMaxAdmissionReviewBytes);
  server_->set_read_timeout(std::chrono::seconds(2));
  // The API server keeps its connections: many reviews each, no Nagle delay on the answer; an
  // idle one closed after a second, so that Stop (which waits for them) is quick.
  server_->set_tcp_nodelay(true);
  server_->set_keep_alive_max_count(100000);
  server_->set_keep_alive_timeout(1);
  server_->Post("/validate", [this](const httplib::Request& req, httplib::Response& res) {
    auto [status, text] = Review(req.body);
    res.status = status;
    res.set_content(text, status == 200 ? "application/json" : "text/plain");
  });
  if (!server_->bind_to_port(options.host, options.port)) {
    return Status::Unavailable("--admission-listen: cannot listen on " + options.host + ":" +
                               std::to_string(options.port));
  }
  port_ = options.port;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return Status::Ok();
}

void AdmissionServer::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tocsin::controller

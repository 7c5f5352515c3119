#include "controller/admission_server.h"

#include <chrono>

#include "audit/catalog.h"
#include "audit/jobs.h"
#include "base/strings.h"
#include "k8s/admission.h"

namespace tocsin::controller {

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
  https::ServerOptions o;
  o.host = options.host;
  o.port = options.port;
  o.cert_file = options.cert_file;
  o.key_file = options.key_file;
  o.post_path = "/validate";
  o.max_body = k8s::kMaxAdmissionReviewBytes;
  o.handler = [this](std::string_view body) {
    auto [status, text] = Review(body);
    return https::Response{.status = status,
                           .content_type = status == 200 ? "application/json" : "text/plain",
                           .body = std::move(text)};
  };
  auto server = https::StartServer(o);
  if (!server.ok()) {
    if (server.status().code() == StatusCode::kInvalidArgument) return server.status();
    return Status::Unavailable("--admission-listen: " + server.status().message());
  }
  server_ = std::move(*server);
  port_ = options.port;
  return Status::Ok();
}

void AdmissionServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace tocsin::controller

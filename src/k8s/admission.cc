// AdmissionReview v1 for the validating webhook: simdjson on-demand over the body in one pass,
// request.object through the snapshot decoder (DecodeObject), so a job's templates are read the
// same way as in `tocsin audit`.
#include "k8s/admission.h"

#include <nlohmann/json.hpp>

#include "k8s/json_fields.h"

namespace tocsin::k8s {
namespace {

using namespace internal;

Err DecodeRequest(od::value v, AdmissionRequest& r, Snapshot& snap) {
  return Fields(v, [&](std::string_view k, od::value f) -> Err {
    if (k == "uid") return String(f, r.uid);
    if (k == "operation") return String(f, r.operation);
    if (k == "namespace") return String(f, r.ns);
    if (k == "name") return String(f, r.name);
    if (k == "dryRun") return Bool(f, r.dry_run);
    if (k == "kind") {
      return Fields(f, [&](std::string_view kk, od::value kv) -> Err {
        return kk == "kind" ? String(kv, r.kind) : Err{};
      });
    }
    if (k != "object" || IsNull(f)) return {};
    od::object obj;
    TRY_SJ(f.get_object().get(obj), "");
    r.has_object = true;
    return DecodeObject(obj, "", snap);
  });
}

// Cuts `s` to at most `max` bytes, not inside a UTF-8 sequence.
std::string Cut(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

Result<AdmissionRequest> DecodeAdmissionReview(std::string_view body) {
  if (body.size() > kMaxAdmissionReviewBytes) {
    return Status::InvalidArgument("AdmissionReview of " + std::to_string(body.size()) +
                                   " bytes: more than the " +
                                   std::to_string(kMaxAdmissionReviewBytes) + " accepted");
  }
  simdjson::padded_string padded(body);
  od::parser parser(kMaxAdmissionReviewBytes);
  if (parser.allocate(padded.size(), kMaxAdmissionDepth) != simdjson::SUCCESS) {
    return Status::Internal("AdmissionReview: cannot allocate the parser");
  }
  od::document doc;
  if (auto e = parser.iterate(padded).get(doc)) {
    return Status::ParseError("AdmissionReview: " + JsonError(e));
  }
  od::object root;
  if (auto e = doc.get_object().get(root)) {
    return Status::ParseError("AdmissionReview: not a JSON object: " + JsonError(e));
  }
  AdmissionRequest r;
  Snapshot snap;
  std::string api_version, kind;
  bool has_request = false;
  for (auto field : root) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) {
      return Status::ParseError("AdmissionReview: " + JsonError(e));
    }
    od::value value;
    if (auto e = field.value().get(value)) {
      return Status::ParseError("AdmissionReview: field " + std::string(key) + ": " +
                                JsonError(e));
    }
    Err err;
    if (key == "apiVersion") err = String(value, api_version);
    if (key == "kind") err = String(value, kind);
    if (key == "request") {
      has_request = true;
      err = DecodeRequest(value, r, snap);
      if (err) err.path = "request." + err.path;
    }
    if (err) return ToStatus(err, "AdmissionReview");
  }
  if (kind != "AdmissionReview" || api_version != "admission.k8s.io/v1") {
    return Status::InvalidArgument("not an admission.k8s.io/v1 AdmissionReview (apiVersion " +
                                   Quote(api_version) + ", kind " + Quote(kind) + ")");
  }
  if (!has_request) return Status::InvalidArgument("AdmissionReview without a request");
  if (r.uid.empty()) return Status::InvalidArgument("AdmissionReview request without a uid");
  if (r.uid.size() > 128) return Status::InvalidArgument("AdmissionReview uid over 128 bytes");
  if (!snap.jobs.empty()) {
    r.job = std::move(snap.jobs.front());
    if (r.job.pod_sets.size() > kMaxPodSets) {
      return Status::InvalidArgument("request.object has " +
                                     std::to_string(r.job.pod_sets.size()) +
                                     " pod templates: more than " + std::to_string(kMaxPodSets));
    }
  }
  return r;
}

std::string EncodeAdmissionResponse(const std::string& uid, const std::vector<std::string>& warnings,
                                    const std::string& deny_message) {
  nlohmann::json response = {{"uid", uid}, {"allowed", deny_message.empty()}};
  nlohmann::json list = nlohmann::json::array();
  size_t total = 0;
  for (const auto& w : warnings) {
    std::string cut = Cut(w, 256);
    if (list.size() == 32 || total + cut.size() > 4096) break;
    total += cut.size();
    list.push_back(cut);
  }
  if (!list.empty()) response["warnings"] = list;
  if (!deny_message.empty()) {
    response["status"] = {{"code", 403}, {"reason", "Forbidden"},
                          {"message", Cut(deny_message, 1024)}};
  }
  return nlohmann::json{{"apiVersion", "admission.k8s.io/v1"},
                        {"kind", "AdmissionReview"},
                        {"response", response}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tocsin::k8s

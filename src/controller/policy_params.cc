#include "controller/policy_params.h"

#include <nlohmann/json.hpp>

namespace tocsin::controller {

PolicyParamsWriter::PolicyParamsWriter(PolicyParamsOptions options,
                                       prometheus::Registry& registry)
    : options_(std::move(options)) {
  writes_ = &prometheus::BuildCounter()
                 .Name("tocsin_controller_policy_params_writes_total")
                 .Help("Writes of the admission policies' params ConfigMap (--policy-params), "
                       "by result: ok, error.")
                 .Register(registry);
  synced_ = &prometheus::BuildGauge()
                 .Name("tocsin_controller_policy_params_synced")
                 .Help("1 when the params ConfigMap (--policy-params) holds what the cluster "
                       "offers now; 0 before the first write and after a failed one.")
                 .Register(registry)
                 .Add({});
  writes_->Add({{"result", "ok"}});
  writes_->Add({{"result", "error"}});
}

std::string PolicyParamsWriter::Path(const PolicyParamsOptions& o) {
  return "/api/v1/namespaces/" + o.ns + "/configmaps/" + o.name;
}

std::string PolicyParamsWriter::Publish(const policy::Params& params, k8s::ApiClient& client,
                                        TimePoint now) {
  std::string data = policy::ParamsData(params).dump();
  if (written_ == data && now - written_at_ < options_.reassert) return "";
  if (failed_at_ && now - *failed_at_ < options_.retry) return "";
  nlohmann::json patch = {{"data", nlohmann::json::parse(data)}};
  auto r = client.Send("PATCH", Path(options_), patch.dump(), "application/merge-patch+json");
  if (r.ok()) {
    written_ = data;
    written_at_ = now;
    failed_at_.reset();
    last_error_.clear();
    writes_->Add({{"result", "ok"}}).Increment();
    synced_->Set(1);
    return "";
  }
  written_.reset();
  failed_at_ = now;
  writes_->Add({{"result", "error"}}).Increment();
  synced_->Set(0);
  std::string why = r.status().message();
  long status = client.last_status();
  std::string where = "ConfigMap " + options_.ns + "/" + options_.name;
  if (status == 404) {
    why = where + " does not exist: apply `tocsin policy`'s manifests (it holds the params) " +
          "first; " + why;
  } else if (status == 403) {
    why = "no right to patch " + where + " (deploy/components/policy-params): " + why;
  } else {
    why = "cannot write " + where + ": " + why;
  }
  if (why == last_error_) return "";  // logged once per distinct failure
  last_error_ = why;
  return why;
}

}  // namespace tocsin::controller

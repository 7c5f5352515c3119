#include "controller/admission_server.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <nlohmann/json.hpp>

#include "audit/catalog.h"

namespace tocsin::controller {
namespace {

using nlohmann::json;

// An AdmissionReview for `object` as the API server sends it.
std::string Review(const json& object, const std::string& uid = "u-1") {
  return json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", uid},
                {"kind", {{"group", "batch"}, {"version", "v1"}, {"kind", object["kind"]}}},
                {"operation", "CREATE"},
                {"namespace", "ml"},
                {"object", object}}}}
      .dump();
}

// A Job of 2 pods on sockets: NCCL_IB_DISABLE=1, no RDMA resource.
json SocketJob() {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "bench"}, {"namespace", "ml"}}},
          {"spec",
           {{"parallelism", 2},
            {"template",
             {{"spec",
               {{"containers",
                 {{{"name", "c"},
                   {"env", {{{"name", "NCCL_IB_DISABLE"}, {"value", "1"}}}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}}}}}};
}

std::string Metrics(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

TEST(AdmissionServerTest, ABadJobIsAllowedWithTheAuditsWarnings) {
  auto registry = std::make_shared<prometheus::Registry>();
  AdmissionServer server(registry);
  auto [status, body] = server.Review(Review(SocketJob()));
  ASSERT_EQ(status, 200) << body;
  json r = json::parse(body);
  EXPECT_EQ(r["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(r["response"]["uid"], "u-1");
  EXPECT_EQ(r["response"]["allowed"], true);
  ASSERT_EQ(r["response"]["warnings"].size(), 2u) << body;
  std::string first = r["response"]["warnings"][0];
  EXPECT_EQ(first.rfind(std::string(audit::kJobRdmaNotRequested) + ": Job bench: 2 pods", 0), 0u)
      << first;
  EXPECT_EQ(r["response"]["warnings"][1].get<std::string>().rfind(audit::kJobNcclFallbackEnv, 0),
            0u);
  std::string m = Metrics(*registry);
  EXPECT_NE(m.find("tocsin_controller_admission_requests_total{result=\"warned\"} 1"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("tocsin_controller_admission_warnings_total{check=\"" +
                   std::string(audit::kJobNcclFallbackEnv) + "\"} 1"),
            std::string::npos);
}

TEST(AdmissionServerTest, GoodOwnedAndOtherObjectsAreAllowedSilently) {
  AdmissionServer server(std::make_shared<prometheus::Registry>());
  json good = SocketJob();
  auto& c = good["spec"]["template"]["spec"]["containers"][0];
  c["env"] = json::array();
  c["resources"]["limits"]["rdma/hca_shared_devices_a"] = "1";
  c["securityContext"] = {{"capabilities", {{"add", {"IPC_LOCK"}}}}};
  json owned = SocketJob();
  owned["metadata"]["ownerReferences"] = {{{"kind", "JobSet"}, {"name", "js"}, {"uid", "x"}}};
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", {{"name", "p"}}}};
  for (const json& obj : {good, owned, pod}) {
    auto [status, body] = server.Review(Review(obj));
    ASSERT_EQ(status, 200) << body;
    json r = json::parse(body);
    EXPECT_EQ(r["response"]["allowed"], true);
    EXPECT_FALSE(r["response"].contains("warnings")) << body;
  }
}

TEST(AdmissionServerTest, DeniesOnlyTheConfiguredChecks) {
  auto registry = std::make_shared<prometheus::Registry>();
  AdmissionServer server(registry);
  AdmissionOptions o;
  o.deny = {audit::kJobNcclFallbackEnv};
  // Start is what sets the options; without TLS files it fails after keeping them.
  (void)server.Start(o);
  auto [status, body] = server.Review(Review(SocketJob()));
  json r = json::parse(body);
  EXPECT_EQ(r["response"]["allowed"], false);
  EXPECT_EQ(r["response"]["status"]["code"], 403);
  EXPECT_NE(r["response"]["status"]["message"].get<std::string>().find(audit::kJobNcclFallbackEnv),
            std::string::npos);
  EXPECT_EQ(r["response"]["warnings"].size(), 2u);  // the warnings still reach the user
}

TEST(AdmissionServerTest, HostileReviewsAreClearErrors) {
  AdmissionServer server(std::make_shared<prometheus::Registry>());
  std::string deep(10000, '[');
  for (const auto& [body, says] : std::vector<std::pair<std::string, std::string>>{
           {"", "empty"},
           {"{\"kind\": \"AdmissionReview\"", "AdmissionReview"},
           {"[1, 2]", "not a JSON object"},
           {deep, "AdmissionReview"},
           {json{{"apiVersion", "admission.k8s.io/v1beta1"}, {"kind", "AdmissionReview"},
                 {"request", {{"uid", "x"}}}}.dump(),
            "admission.k8s.io/v1beta1"},
           {json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}}.dump(),
            "without a request"},
           {json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", {{"object", {}}}}}.dump(),
            "uid"},
           {json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"},
                 {"request", {{"uid", "x"}, {"object", {{"kind", "Job"}, {"spec", 3}}}}}}.dump(),
            "spec"},
           {std::string(5 << 20, ' '), "bytes"},
       }) {
    auto [status, text] = server.Review(body);
    EXPECT_EQ(status, 400) << says;
    EXPECT_NE(text.find(says), std::string::npos) << text;
  }
}

TEST(AdmissionServerTest, HugeReplicaCountsDoNotOverflow) {
  AdmissionServer server(std::make_shared<prometheus::Registry>());
  json job = SocketJob();
  job["spec"]["parallelism"] = 9223372036854775807LL;
  auto [status, body] = server.Review(Review(job));
  ASSERT_EQ(status, 200) << body;
  EXPECT_NE(body.find("1000000 pods"), std::string::npos) << body;
}

TEST(AdmissionServerTest, StartNamesAMissingCertificate) {
  AdmissionServer server(std::make_shared<prometheus::Registry>());
  AdmissionOptions o;
  o.host = "127.0.0.1";
  o.port = 1;  // never bound: the certificate is loaded first
  o.cert_file = "/no/such/cert.pem";
  o.key_file = "/no/such/key.pem";
  Status st = server.Start(o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.message();
  EXPECT_NE(st.message().find("--tls-cert-file /no/such/cert.pem"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace tocsin::controller

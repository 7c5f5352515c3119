#include "k8s/decode.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace tocsin::k8s {
namespace {

TEST(DecodeTest, ListWithMixedKindsAndOmittedCounters) {
  Snapshot s;
  Status st = DecodeJson(R"({"apiVersion":"v1","kind":"List","items":[
    {"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"d","namespace":"ns","uid":"u"},
     "spec":{"template":{"spec":{"nodeSelector":{"a":"b"},"containers":[{"name":"c","image":"i:1"}]}}},
     "status":{"currentNumberScheduled":2,"desiredNumberScheduled":2,"numberMisscheduled":0,
               "numberReady":1}},
    {"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}},
    {"apiVersion":"v1","kind":"Node","metadata":{"name":"n","labels":{"x":"y"}},
     "status":{"allocatable":{"rdma/a":"4","cpu":8}}}]})",
                         "snap.json", s);
  ASSERT_OK(st);
  ASSERT_EQ(s.daemonsets.size(), 1u);
  EXPECT_EQ(s.daemonsets[0].ready, 1);
  EXPECT_EQ(s.daemonsets[0].available, 0);  // omitempty
  EXPECT_EQ(s.daemonsets[0].node_selector.at("a"), "b");
  EXPECT_EQ(s.daemonsets[0].images[0], "i:1");
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].allocatable.at("cpu"), "8");  // a number kept as its text
  EXPECT_EQ(s.other_kinds.at("Service"), 1);
}

// What a canary's judge reads of a pod; a termination message only for tocsin's canaries.
TEST(DecodeTest, CanaryPodFieldsAndTerminationMessagesOfCanariesOnly) {
  Snapshot s;
  const char* pods = R"({"kind":"PodList","items":[
    {"metadata":{"name":"c","namespace":"tocsin","labels":{"tocsin.io/canary-round":"r1",
       "tocsin.io/canary-rank":"0","app":"x"},"annotations":{"tocsin.io/canary-node":"n0","a":"b"}},
     "status":{"phase":"Failed","reason":"UnexpectedAdmissionError","message":"no devices",
       "podIP":"10.0.0.5","containerStatuses":[{"name":"bench","state":{"terminated":{
         "exitCode":1,"reason":"Error","message":"{\"v\":1}","finishedAt":"2026-12-01T00:00:00Z"}},
         "lastState":{"terminated":{"exitCode":2,"reason":"Error"}}}]}},
    {"metadata":{"name":"other","namespace":"team"},
     "status":{"containerStatuses":[{"name":"x","state":{"terminated":{"exitCode":0,
       "message":"not kept"}}}]}}]})";
  Status st = DecodeJson(pods, "pods.json", s);
  ASSERT_OK(st);
  ASSERT_EQ(s.pods.size(), 2u);
  const Pod& c = s.pods[0];
  EXPECT_EQ(c.labels.at("tocsin.io/canary-rank"), "0");
  EXPECT_EQ(c.labels.count("app"), 0u);
  EXPECT_EQ(c.annotations.at("tocsin.io/canary-node"), "n0");
  EXPECT_EQ(c.annotations.count("a"), 0u);
  EXPECT_EQ(c.reason, "UnexpectedAdmissionError");
  EXPECT_EQ(c.message, "no devices");
  EXPECT_EQ(c.pod_ip, "10.0.0.5");
  ASSERT_EQ(c.statuses.size(), 1u);
  EXPECT_EQ(c.statuses[0].exit_code, 1);
  EXPECT_EQ(c.statuses[0].termination_message, "{\"v\":1}");
  EXPECT_TRUE(c.statuses[0].finished.has_value());
  EXPECT_EQ(c.statuses[0].last_exit_code, 2);
  EXPECT_EQ(s.pods[1].statuses[0].exit_code, 0);
  EXPECT_EQ(s.pods[1].statuses[0].termination_message, "");
}

// A device plugin's config: the DaemonSet's ConfigMap volumes and arguments, and the ConfigMap's
// entries that hold a plugin config (the others are dropped).
TEST(DecodeTest, DevicePluginConfigMapsAndArgs) {
  Snapshot s;
  Status st = DecodeJson(R"({"kind":"List","items":[
    {"kind":"DaemonSet","metadata":{"name":"sriov","namespace":"kube-system"},
     "spec":{"template":{"spec":{
       "containers":[{"name":"c","image":"i","command":["/usr/bin/sriovdp"],
                      "args":["--resource-prefix=example.com","--log-level=10"]}],
       "volumes":[{"name":"dp","hostPath":{"path":"/var/lib/kubelet/device-plugins"}},
                  {"name":"config-volume","configMap":{"name":"sriovdp-config"}}]}}}},
    {"kind":"ConfigMap","metadata":{"name":"sriovdp-config","namespace":"kube-system"},
     "data":{"config.json":"{\"resourceList\":[]}","README":"not a config"}}]})",
                         "snap.json", s);
  ASSERT_OK(st);
  ASSERT_EQ(s.daemonsets.size(), 1u);
  EXPECT_EQ(s.daemonsets[0].config_maps, std::vector<std::string>{"sriovdp-config"});
  EXPECT_EQ(s.daemonsets[0].args,
            (std::vector<std::string>{"/usr/bin/sriovdp", "--resource-prefix=example.com",
                                      "--log-level=10"}));
  ASSERT_EQ(s.configmaps.size(), 1u);
  EXPECT_EQ(s.configmaps[0].ns, "kube-system");
  ASSERT_EQ(s.configmaps[0].data.size(), 1u);
  EXPECT_EQ(s.configmaps[0].data.at("config.json"), R"({"resourceList":[]})");
}

TEST(DecodeTest, ErrorsNameSourceItemAndField) {
  Snapshot s;
  Status st = DecodeJson(R"({"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"}},
    {"kind":"Pod","metadata":{"name":"p","creationTimestamp":"last tuesday"}}]})",
                         "snap.json", s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("snap.json"), std::string::npos);
  EXPECT_NE(st.message().find("items[1]"), std::string::npos);
  EXPECT_NE(st.message().find("metadata.creationTimestamp"), std::string::npos);

  Status type = DecodeJson(R"({"kind":"DaemonSet","status":{"numberReady":"three"}})", "d.json", s);
  ASSERT_FALSE(type.ok());
  EXPECT_NE(type.message().find("status.numberReady"), std::string::npos);
  // In plain words, not simdjson's ("The JSON element does not have the requested type.").
  EXPECT_NE(type.message().find(": wrong type"), std::string::npos) << type.message();
  EXPECT_EQ(type.message().find("JSON element"), std::string::npos) << type.message();
  Status lone = DecodeJson("3", "n.json", s);
  EXPECT_EQ(lone.message().find("get_bool"), std::string::npos) << lone.message();
  for (const char* bad : {R"({"kind":"List","items":[{]})", R"({"kind":"Pod"} trailing)",
                          R"({"kind":"Pod","metadata":{"name":""}})"}) {
    Status st2 = DecodeJson(bad, "bad.json", s);
    ASSERT_FALSE(st2.ok()) << bad;
    EXPECT_EQ(st2.message().find("simdjson"), std::string::npos) << st2.message();
    EXPECT_EQ(st2.message().find("SIMDJSON"), std::string::npos) << st2.message();
    EXPECT_EQ(st2.message().find("JSON element"), std::string::npos) << st2.message();
  }

  EXPECT_FALSE(DecodeJson(R"({"kind":"List","items":[{"kind":"Node")", "cut.json", s).ok());
  EXPECT_FALSE(DecodeJson("[1,2]", "arr.json", s).ok());
  EXPECT_FALSE(DecodeJson(R"({"kind":"NodeList"})", "noitems.json", s).ok());
  EXPECT_FALSE(DecodeYaml("kind: [unclosed", "bad.yaml", s).ok());
  // A file that is not JSON is read as YAML: an error says it is neither.
  for (const char* garbage : {"kind: [unclosed", "%% not: [json", "hello world", "- a\n- b\n"}) {
    Status yaml = DecodeYaml(garbage, "x.json", s);
    EXPECT_EQ(yaml.message().rfind("x.json: neither JSON (it does not start with { or [) nor ", 0),
              0u)
        << yaml.message();
  }
}

TEST(DecodeTest, ListPageMetadata) {
  Snapshot s;
  ListMeta meta;
  // Item metadata (depth 3) must not be mistaken for the List's own.
  ASSERT_TRUE(DecodeJson(R"({"kind":"PodList","apiVersion":"v1",
      "metadata":{"resourceVersion":"1234","continue":"eyJzdGFydCI6IDJ9\u003d","remainingItemCount":3},
      "items":[{"metadata":{"name":"p","namespace":"n","continue":"no","resourceVersion":"9"}}]})",
                         "page", s, &meta)
                  .ok());
  EXPECT_EQ(meta.kind, "PodList");
  EXPECT_EQ(meta.resource_version, "1234");
  EXPECT_EQ(meta.continue_token, "eyJzdGFydCI6IDJ9=");  // JSON escapes decoded
  EXPECT_EQ(s.pods.size(), 1u);

  ListMeta last;
  ASSERT_TRUE(DecodeJson(R"({"kind":"NodeList","metadata":{},"items":[]})", "end", s, &last).ok());
  EXPECT_EQ(last.kind, "NodeList");
  EXPECT_TRUE(last.continue_token.empty());
}

}  // namespace
}  // namespace tocsin::k8s

namespace tocsin::k8s {
namespace {

TEST(ObjectNameTest, OnlyDns1123SubdomainsAreNames) {
  for (const char* good : {"tocsin", "tocsin-policy-params", "a", "a.b-c.0"}) {
    EXPECT_TRUE(IsObjectName(good)) << good;
  }
  for (const char* bad : {"", "-a", "a-", "A", "a/b", "..", "a_b", "a b", "%2e%2e"}) {
    EXPECT_FALSE(IsObjectName(bad)) << bad;
  }
  EXPECT_TRUE(IsObjectName(std::string(253, 'a')));
  EXPECT_FALSE(IsObjectName(std::string(254, 'a')));
}

}  // namespace
}  // namespace tocsin::k8s

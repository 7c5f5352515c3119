#include "jobview/queries.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "jobview/catalog.h"
#include "testing/status_matchers.h"

namespace tocsin::jobview {
namespace {

// The rules' group tocsin-job is the single source: this table must say exactly what it says.
TEST(QueriesTest, TheTablesAreTheRulesGroupTocsinJob) {
  YAML::Node rules = YAML::LoadFile(std::string(TOCSIN_SOURCE_DIR) + "/deploy/agent/alerts.yaml");
  YAML::Node group;
  for (size_t i = 0; i < rules["groups"].size(); ++i) {
    if (rules["groups"][i]["name"].as<std::string>() == "tocsin-job") group = rules["groups"][i];
  }
  ASSERT_TRUE(group) << "deploy/agent/alerts.yaml has no group tocsin-job";
  size_t records = 0, alerts = 0, bitmasks = 0;
  for (const auto& rule : group["rules"]) {
    if (rule["record"] && rule["record"].as<std::string>() == kVerdictBitmask) {
      // The last rule: it reads the records and the alerts' conditions of the same evaluation.
      EXPECT_EQ(rule["expr"].as<std::string>(), VerdictBitmaskExpr());
      EXPECT_EQ(alerts, Verdicts().size());
      ++bitmasks;
    } else if (rule["record"]) {
      ASSERT_LT(records, Records().size()) << rule["record"].as<std::string>();
      EXPECT_EQ(rule["record"].as<std::string>(), Records()[records].name);
      EXPECT_EQ(rule["expr"].as<std::string>(), Records()[records].expr);
      ++records;
    } else {
      ASSERT_LT(alerts, Verdicts().size()) << rule["alert"].as<std::string>();
      const Verdict& v = Verdicts()[alerts];
      EXPECT_EQ(rule["alert"].as<std::string>(), v.alert);
      EXPECT_EQ(rule["expr"].as<std::string>(), v.expr);
      EXPECT_EQ(rule["labels"]["check"].as<std::string>(), v.check);
      EXPECT_EQ(rule["labels"]["severity"].as<std::string>(), v.alert_severity);
      EXPECT_EQ(rule["for"].as<std::string>(), std::to_string(v.hold.count() / 60) + "m");
      EXPECT_TRUE(Catalog().Find(v.check)) << v.check;
      ++alerts;
    }
  }
  EXPECT_EQ(records, Records().size());
  EXPECT_EQ(alerts, Verdicts().size());
  EXPECT_EQ(bitmasks, 1u);
  int bits = 0;
  for (const Verdict& v : Verdicts()) {
    EXPECT_EQ(v.bit & bits, 0) << v.check;  // one bit each
    bits |= v.bit;
  }
}

TEST(QueriesTest, ExpandReplacesWholeRecordNamesOnly) {
  EXPECT_EQ(ExpandRecords("tocsin:job_node:info > 0"),
            "(max by (namespace, job_name, node) (tocsin_pod_info)) > 0");
  EXPECT_EQ(ExpandRecords("tocsin:job_node:infox + xtocsin:job_node:info"),
            "tocsin:job_node:infox + xtocsin:job_node:info");
  for (const Verdict& v : Verdicts()) {
    std::string expanded = ExpandRecords(v.expr);
    EXPECT_EQ(expanded.find("tocsin:"), std::string::npos) << expanded;
  }
}

TEST(QueriesTest, ForJobNarrowsEveryPodInfo) {
  JobRef job{"ml", "llm-7b"};
  std::string q = ForJob(ExpandRecords(kGpuUtilization), job);
  EXPECT_EQ(q.find("tocsin_pod_info)"), std::string::npos) << q;
  EXPECT_NE(q.find("tocsin_pod_info{namespace=\"ml\", job_name=\"llm-7b\"}"), std::string::npos);
  EXPECT_NE(q.find("tocsin_pod_device_info{device_kind=\"gpu\"}"), std::string::npos) << q;
  EXPECT_EQ(ForJob("tocsin_pod_info_x + my_tocsin_pod_info", job),
            "tocsin_pod_info_x + my_tocsin_pod_info");
}

TEST(QueriesTest, ForJobRecordedNarrowsEveryRecordName) {
  JobRef job{"ml", "llm-7b"};
  EXPECT_EQ(ForJobRecorded("tocsin:job_node_gpu_utilization:avg < 0.5 and "
                           "tocsin:job_node_gpu_utilization:avgx > 1",
                           job),
            "max by (namespace, job_name, node) (tocsin:job_node_gpu_utilization:avg"
            "{namespace=\"ml\", job_name=\"llm-7b\"}) < 0.5 "
            "and tocsin:job_node_gpu_utilization:avgx > 1");
  EXPECT_EQ(ForJobRecorded(kProcessTransport, job),
            "max by (namespace, job_name, node, pod, pid, transport) "
            "(tocsin:job_process_nccl_transport:info{namespace=\"ml\", job_name=\"llm-7b\"})");
  for (const Verdict& v : Verdicts()) {
    std::string q = ForJobRecorded(v.expr, job);
    EXPECT_EQ(q.find("tocsin_pod_info"), std::string::npos) << q;
    EXPECT_EQ(q.find(":info)"), std::string::npos) << q;  // every record narrowed
  }
}

TEST(QueriesTest, JobRefIsNamespaceSlashNameOfSafeCharacters) {
  ASSERT_OK_AND_ASSIGN(JobRef job, ParseJobRef("ml/llm-7b.v2_x"));
  EXPECT_EQ(job.namespace_, "ml");
  EXPECT_EQ(job.name, "llm-7b.v2_x");
  for (const char* bad : {"llm", "/llm", "ml/", "ml/a\"b", "ml/a}b", "ml/a/b", "ml/a b", ""}) {
    EXPECT_FALSE(ParseJobRef(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseJobRef("ml/" + std::string(254, 'a')).ok());
}

}  // namespace
}  // namespace tocsin::jobview

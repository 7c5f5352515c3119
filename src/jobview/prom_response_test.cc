#include "jobview/prom_response.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/status_matchers.h"

namespace tocsin::jobview {
namespace {

// As Prometheus 2.42 answers /api/v1/query_range.
constexpr char kMatrix[] = R"({"status":"success","data":{"resultType":"matrix","result":[
 {"metric":{"job_name":"llm","namespace":"ml","node":"node-1"},
  "values":[[1700000000,"0.92"],[1700000015.5,"NaN"],[1700000030,"+Inf"]]},
 {"metric":{"node":"node-2"},"values":[[1700000000,"-Inf"]]}]}})";

TEST(PromResponseTest, MatrixWithSpecialValues) {
  ASSERT_OK_AND_ASSIGN(QueryResult r, ParseQueryResponse(kMatrix));
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].labels.at("node"), "node-1");
  ASSERT_EQ(r.series[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ(r.series[0].points[0].v, 0.92);
  EXPECT_DOUBLE_EQ(r.series[0].points[1].t, 1700000015.5);
  EXPECT_TRUE(std::isnan(r.series[0].points[1].v));
  EXPECT_TRUE(std::isinf(r.series[0].points[2].v));
  EXPECT_TRUE(std::isinf(r.series[1].points[0].v) && r.series[1].points[0].v < 0);
  EXPECT_EQ(r.drops.total(), 0u);
}

TEST(PromResponseTest, Vector) {
  ASSERT_OK_AND_ASSIGN(
      QueryResult r,
      ParseQueryResponse(R"({"status":"success","data":{"resultType":"vector","result":[)"
                         R"({"metric":{"node":"a"},"value":[1700000000,"3"]}]}})"));
  ASSERT_EQ(r.series.size(), 1u);
  EXPECT_DOUBLE_EQ(r.series[0].points.at(0).v, 3);
}

TEST(PromResponseTest, ErrorsNameWhatPrometheusSaid) {
  auto r = ParseQueryResponse(
      R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad_data"), std::string::npos);
  EXPECT_NE(r.status().message().find("parse error at char 3"), std::string::npos);
  for (const char* bad : {"", "null", "[]", "{}", R"({"status":"success"})",
                          R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})",
                          R"({"status":"success","data":{"resultType":"matrix","result":{}}})",
                          R"({"status":1})", "{\"status\":\"success\",\"data\":"}) {
    EXPECT_FALSE(ParseQueryResponse(bad).ok()) << bad;
  }
}

TEST(PromResponseTest, MalformedSeriesAndPointsAreCountedNotKept) {
  ASSERT_OK_AND_ASSIGN(
      QueryResult r,
      ParseQueryResponse(
          R"({"status":"success","data":{"resultType":"matrix","result":[)"
          R"(7, {"values":[[1,"1"]]}, {"metric":{"node":5},"values":[]},)"
          R"({"metric":{"node":"a"},"values":[[2,"1"],[1,"2"],[3,"x"],["4","1"],[5],[6,"1","2"],[7,"7"]]}]}})"));
  ASSERT_EQ(r.series.size(), 1u);
  ASSERT_EQ(r.series[0].points.size(), 2u);  // t=2 and t=7
  EXPECT_DOUBLE_EQ(r.series[0].points[1].t, 7);
  EXPECT_EQ(r.drops.series, 3u);
  EXPECT_EQ(r.drops.points, 5u);
}

TEST(PromResponseTest, CapsOnSeriesPointsAndLabels) {
  ResponseLimits limits;
  limits.max_series = 2;
  limits.max_points = 3;
  limits.max_labels = 2;
  limits.max_label_bytes = 8;
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  body += R"({"metric":{"a":"1","b":"2","c":"3"},"values":[[1,"1"]]},)";  // too many labels
  body += R"({"metric":{"a":"123456789"},"values":[[1,"1"]]},)";          // too long
  body += R"({"metric":{"a":"1"},"values":[[1,"1"],[2,"1"],[3,"1"],[4,"1"]]},)";
  body += R"({"metric":{"a":"2"},"values":[[1,"1"]]},)";
  body += R"({"metric":{"a":"3"},"values":[[1,"1"]]}]}})";  // over max_series
  ASSERT_OK_AND_ASSIGN(QueryResult r, ParseQueryResponse(body, limits));
  ASSERT_EQ(r.series.size(), 2u);
  EXPECT_EQ(r.series[0].points.size(), 3u);
  EXPECT_EQ(r.drops.series, 3u);
  EXPECT_EQ(r.drops.points, 1u);
}

TEST(PromResponseTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  deep += std::string(5000, '[') + std::string(5000, ']') + "]}}";
  auto r = ParseQueryResponse(deep);
  if (r.ok()) {
    EXPECT_TRUE(r->series.empty());
  }
}

}  // namespace
}  // namespace tocsin::jobview

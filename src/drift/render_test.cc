#include "drift/render.h"

#include <gtest/gtest.h>

namespace tocsin::drift {
namespace {

Report OneFinding() {
  Report r;
  r.command = "diff";
  Finding f{"drift.network.attachment",
            Severity::kError,
            "network rdma-net: mtu",
            "mtu 9000 in a, 4096 in b <&>",
            std::nullopt,
            {{"group", "networks"}, {"a", "9000"}, {"b", "4|096"}}};
  r.findings.push_back(f);
  Finding info{"drift.template.env", Severity::kInfo,         "template Job/x: UCX_TLS", "differs",
               std::nullopt,         {{"group", "templates"}}};
  r.findings.push_back(info);
  return r;
}

TEST(RenderTest, JunitOneTestcasePerItemFailuresAtFailOn) {
  std::vector<Item> items = {{Group::kNetworks, "network rdma-net: mtu", "9000", "4096", true},
                             {Group::kNetworks, "network rdma-net: type", "a", "a", false},
                             {Group::kTemplates, "template Job/x: UCX_TLS", "a", "b", true}};
  std::string x = RenderJunit(OneFinding(), items, Severity::kError);
  EXPECT_NE(x.find(R"(<testsuites name="tocsin diff" tests="3" failures="1">)"), std::string::npos)
      << x;
  EXPECT_NE(x.find(R"(<testsuite name="tocsin.diff.networks" tests="2" failures="1")"),
            std::string::npos);
  EXPECT_NE(
      x.find(
          R"(<failure type="drift.network.attachment" message="mtu 9000 in a, 4096 in b &lt;&amp;&gt;">)"),
      std::string::npos)
      << x;
  EXPECT_NE(x.find(R"(<testcase classname="tocsin.diff.networks" name="network rdma-net: type"/>)"),
            std::string::npos);
  EXPECT_NE(x.find("<system-out>info drift.template.env: differs\n</system-out>"),
            std::string::npos);
}

TEST(RenderTest, MarkdownTablesPerGroup) {
  k8s::Snapshot s;
  std::string md = RenderMarkdown(OneFinding(), {"staging", "s", &s}, {"prod", "p", &s});
  EXPECT_NE(md.find("### tocsin diff: staging vs prod"), std::string::npos);
  EXPECT_NE(md.find("**1 error, 1 info**"), std::string::npos);
  EXPECT_NE(md.find("#### networks"), std::string::npos);
  EXPECT_NE(
      md.find("| error | `drift.network.attachment` | network rdma-net: mtu | 9000 | 4\\|096 |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("&lt;&&gt;"), std::string::npos);
}

}  // namespace
}  // namespace tocsin::drift

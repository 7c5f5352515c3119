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

// The number of `<tag ` or `<tag>` elements in `xml`.
size_t Count(const std::string& xml, const std::string& tag) {
  size_t n = 0;
  for (size_t p = xml.find("<" + tag); p != std::string::npos; p = xml.find("<" + tag, p + 1)) {
    char next = xml[p + tag.size() + 1];
    if (next == ' ' || next == '>' || next == '/') ++n;
  }
  return n;
}

// The value of attribute `name` of the first element `tag`.
std::string Attribute(const std::string& xml, const std::string& tag, const std::string& name) {
  size_t p = xml.find("<" + tag + " ");
  size_t end = xml.find('>', p);
  size_t a = xml.find(" " + name + "=\"", p);
  if (p == std::string::npos || a == std::string::npos || a > end) return "";
  a += name.size() + 3;
  return xml.substr(a, xml.find('"', a) - a);
}

TEST(RenderTest, JunitOneFailurePerTestcaseAndCountsAgree) {
  Report r;
  const std::string subject = "class p5: hca firmware";
  r.findings.push_back({"drift.class.mixed",
                        Severity::kWarning,
                        subject,
                        "1 of 3 nodes differ",
                        std::nullopt,
                        {{"group", "nodes"}}});
  r.findings.push_back({"drift.node.firmware",
                        Severity::kWarning,
                        subject,
                        "firmware differs",
                        std::nullopt,
                        {{"group", "nodes"}, {"a", "1"}, {"b", "2"}}});
  r.findings.push_back({"drift.node.software",
                        Severity::kInfo,
                        "class p5: kernel",
                        "differs",
                        std::nullopt,
                        {{"group", "nodes"}}});
  std::vector<Item> items = {{Group::kNodes, subject, "1", "2", true},
                             {Group::kNodes, "class p5: kernel", "a", "b", true}};
  std::string x = RenderJunit(r, items, Severity::kInfo);
  EXPECT_EQ(Count(x, "failure"), 2u) << x;
  EXPECT_EQ(Attribute(x, "testsuites", "failures"), "2") << x;
  EXPECT_EQ(Attribute(x, "testsuites", "tests"), std::to_string(Count(x, "testcase"))) << x;
  EXPECT_NE(x.find(R"(<failure type="drift.class.mixed drift.node.firmware" )"
                   R"(message="1 of 3 nodes differ; firmware differs">)"),
            std::string::npos)
      << x;
  x = RenderJunit(r, items, Severity::kWarning);
  EXPECT_EQ(Count(x, "failure"), 1u) << x;
  EXPECT_EQ(Attribute(x, "testsuites", "failures"), "1") << x;
  EXPECT_EQ(Count(x, "system-out"), 1u) << x;
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

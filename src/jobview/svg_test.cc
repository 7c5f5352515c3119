#include "jobview/svg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "jobview/catalog.h"

namespace tocsin::jobview {
namespace {

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

JobView TwoNodes() {
  JobView view;
  view.options.job = {"ml", "llm"};
  view.start = 1700000000;
  view.end = view.start + 600;
  view.step = 15;
  for (const char* node : {"node-1", "<a&b>"}) {
    NodeView& n = view.nodes[node];
    for (const char* record : {kGpuUtilization, kRdmaRate, kEthernetRate, kStorageP99}) {
      for (double t = view.start; t <= view.end; t += 15) {
        // node-1 misses the steps between 300 and 400 s: its lines break there.
        if (std::string(node) == "node-1" && t > view.start + 300 && t < view.start + 400) continue;
        double v = t == view.start + 15 ? std::numeric_limits<double>::quiet_NaN() : 0.5;
        n.series[record].push_back({t, v});
      }
    }
  }
  static const Verdict* stall = [] {
    for (const Verdict& v : Verdicts()) {
      if (std::string(v.check) == kStorageStall) return &v;
    }
    return static_cast<const Verdict*>(nullptr);
  }();
  view.episodes.push_back({stall, "node-1", view.start + 60, view.start + 300, false, 1});
  return view;
}

TEST(SvgTest, ThreePanelsOneLinePerNodeAndSeriesBrokenAtGaps) {
  std::string svg = PlotSvg(TwoNodes());
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_EQ(Count(svg, "<g class=\"panel\">"), 3u);
  EXPECT_EQ(Count(svg, "</g>"), 3u);
  // The NaN at the second step breaks every line, node-1's gap its lines once more: per record
  // 2 lines of <a&b> and 3 of node-1; RDMA and Ethernet share a panel: 5 x (1 + 2 + 1) lines.
  EXPECT_EQ(Count(svg, "<polyline"), 20u);
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 5u);   // Ethernet's
  EXPECT_EQ(Count(svg, "class=\"episode\""), 3u);  // the episode in each panel
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_NE(svg.find("&lt;a&amp;b&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<a&b>"), std::string::npos);
}

TEST(SvgTest, AJobWithoutSeriesStillDrawsItsAxes) {
  JobView view;
  view.options.job = {"ml", "x"};
  view.start = 0;
  view.end = 0;
  view.step = 15;
  view.nodes["n"];
  std::string svg = PlotSvg(view);
  EXPECT_EQ(Count(svg, "<g class=\"panel\">"), 3u);
  EXPECT_EQ(Count(svg, "<polyline"), 0u);
}

}  // namespace
}  // namespace tocsin::jobview

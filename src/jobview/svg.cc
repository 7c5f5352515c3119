#include "jobview/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/escape.h"
#include "base/time.h"

namespace tocsin::jobview {
namespace {

constexpr double kWidth = 960, kLeft = 70, kRight = 170, kPanel = 180, kGap = 40, kTop = 40;
constexpr const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Panel {
  const char* title;
  const char* unit;
  std::vector<std::pair<const char*, const char*>> lines;  // (record, stroke-dasharray)
  double scale;                                            // value -> unit
};

std::string Axis(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 1) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2g}", v);
}

}  // namespace

std::string PlotSvg(const JobView& view) {
  const std::vector<Panel> panels = {
      {"GPU utilisation", "%", {{kGpuUtilization, ""}}, 100},
      {"RDMA (solid) and Ethernet (dashed)",
       "GB/s",
       {{kRdmaRate, ""}, {kEthernetRate, "6 4"}},
       1e-9},
      {"Storage probe write+fsync p99", "s", {{kStorageP99, ""}}, 1},
  };
  double plot_w = kWidth - kLeft - kRight;
  double height = kTop + static_cast<double>(panels.size()) * (kPanel + kGap) + 20;
  double span = std::max(1.0, view.end - view.start);
  auto x = [&](double t) { return kLeft + (t - view.start) / span * plot_w; };
  std::map<std::string, const char*> colour;
  size_t i = 0;
  for (const auto& [node, n] : view.nodes) colour[node] = kColours[i++ % std::size(kColours)];

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{:.0f}\" y=\"20\" font-size=\"15\">job {} from {} to {}</text>\n",
      kWidth, height, kWidth, height, kLeft, XmlEscape(view.options.job.ToString()),
      FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.start))),
      FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.end))));
  for (size_t p = 0; p < panels.size(); ++p) {
    const Panel& panel = panels[p];
    double top = kTop + static_cast<double>(p) * (kPanel + kGap) + 10;
    double max = 0;
    for (const auto& [node, n] : view.nodes) {
      for (const auto& [record, dash] : panel.lines) {
        auto it = n.series.find(record);
        if (it == n.series.end()) continue;
        for (const Point& pt : it->second) {
          if (std::isfinite(pt.v)) max = std::max(max, pt.v * panel.scale);
        }
      }
    }
    if (panel.scale == 100) max = 100;
    if (max <= 0) max = 1;
    auto y = [&](double v) { return top + kPanel - std::clamp(v / max, 0.0, 1.0) * kPanel; };
    out += fmt::format("<g class=\"panel\">\n<text x=\"{:.0f}\" y=\"{:.0f}\">{} ({})</text>\n",
                       kLeft, top - 4, panel.title, panel.unit);
    out += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"none\" "
        "stroke=\"#999\"/>\n<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">0</text>\n",
        kLeft, top, plot_w, kPanel, kLeft - 6, top + 10, Axis(max), kLeft - 6, top + kPanel);
    for (const Episode& e : view.episodes) {
      out += fmt::format(
          "<rect class=\"episode\" x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{:.0f}\" "
          "fill=\"{}\" fill-opacity=\"0.12\"><title>{} on {}</title></rect>\n",
          x(e.start), top, std::max(1.0, x(e.end) - x(e.start)), kPanel, colour[e.node],
          e.verdict->check, XmlEscape(e.node));
    }
    for (const auto& [node, n] : view.nodes) {
      for (const auto& [record, dash] : panel.lines) {
        auto it = n.series.find(record);
        if (it == n.series.end()) continue;
        std::string points;
        double last = -1e300;
        // Structured bindings are not captured by lambdas before clang 16: plain copies are.
        std::string stroke = colour[node];
        std::string dasharray = *dash ? fmt::format(" stroke-dasharray=\"{}\"", dash) : "";
        auto flush = [&] {
          if (!points.empty()) {
            out += fmt::format(
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{} "
                "points=\"{}\"/>\n",
                stroke, dasharray, points);
          }
          points.clear();
        };
        for (const Point& pt : it->second) {
          if (!std::isfinite(pt.v) || pt.t < view.start || pt.t > view.end) continue;
          if (pt.t - last > 1.5 * static_cast<double>(view.step)) flush();
          points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x(pt.t),
                                y(pt.v * panel.scale));
          last = pt.t;
        }
        flush();
      }
    }
    out += "</g>\n";
  }
  double bottom = kTop + static_cast<double>(panels.size()) * (kPanel + kGap) - kGap + 26;
  out += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", kLeft, bottom,
                     FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.start))));
  out +=
      fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"end\">{}</text>\n", kLeft + plot_w,
                  bottom, FormatRfc3339(FromUnixSeconds(static_cast<int64_t>(view.end))));
  double ly = kTop + 20;
  for (const auto& [node, c] : colour) {
    out += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" fill=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
        kWidth - kRight + 16, ly - 10, c, kWidth - kRight + 34, ly, XmlEscape(node));
    ly += 18;
    if (ly > height - 10) break;  // more nodes than the legend holds: the colours repeat anyway
  }
  out += "</svg>\n";
  return out;
}

}  // namespace tocsin::jobview

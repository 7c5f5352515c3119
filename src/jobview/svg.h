#pragma once

#include <string>

#include "jobview/job_view.h"

namespace tocsin::jobview {

// `tocsin job --plot FILE`: the job over its window as an SVG (no dependency: written here).
// Three panels on one time axis: GPU utilisation, RDMA (solid) and Ethernet (dashed) bytes per
// second, and the storage probe's p99; one colour per node, a line broken where a step is
// missing; each verdict's episode shaded on its node's colour in every panel. Text from
// Prometheus (node names) is escaped.
std::string PlotSvg(const JobView& view);

}  // namespace tocsin::jobview

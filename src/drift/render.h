#pragma once

#include <string>
#include <vector>

#include "base/report.h"
#include "drift/drift.h"

namespace tocsin::drift {

// `-o table`: one table per group (nodes, device plugin, networks, templates) of the items that
// differ, with a note of how many were the same; a first table of the two sides.
std::vector<Table> Tables(const Side& a, const Side& b, const DiffResult& result,
                          const Options& options);

// `-o junit`: one <testsuite> per group (tocsin.diff.nodes, tocsin.diff.device-plugin, ...), one
// <testcase> per compared item; each finding of the item at or above `fail_on` is a <failure>
// (type: the check id), the others are <system-out> lines. The report's findings (sorted, accepted
// ones included) are the ones rendered.
std::string RenderJunit(const Report& report, const std::vector<Item>& items, Severity fail_on);

// `-o markdown`: a summary line and one table of findings per group (a pull-request comment).
std::string RenderMarkdown(const Report& report, const Side& a, const Side& b);

}  // namespace tocsin::drift

#pragma once

#include <vector>

#include "audit/checks.h"
#include "base/finding.h"
#include "base/status.h"
#include "k8s/objects.h"

namespace tocsin::audit {

// What the audit could not see, said instead of a silent "ok".

// A snapshot (--from) with no Node, Pod or DaemonSet object gives the audit nothing to check: an
// error naming what it did hold (an empty List, a lone ConfigMap, unrelated or kindless objects).
Status CheckSnapshotUsable(const k8s::Snapshot& snapshot);

// audit.input.incomplete (no Nodes: warning, node-level checks did not run; no Pods: info) and
// audit.fabric.none (info: no node was recognised as a fabric node, with the rule that was used).
void CheckCoverage(const k8s::Snapshot& snapshot, const Options& options,
                   std::vector<Finding>& out);

}  // namespace tocsin::audit

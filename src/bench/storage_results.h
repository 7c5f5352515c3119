#pragma once

#include <string>
#include <vector>

#include "base/report.h"
#include "bench/fs_info.h"
#include "bench/storage_bench.h"
#include "bench/storage_probe.h"
#include "ranks/protocol.h"

namespace tocsin::bench {

// How `bench storage` renders what it measured: tables, inventory and findings.

// A phase table's columns, and one phase's cells (also the progress lines).
const std::vector<std::string>& PhaseColumns();
std::vector<std::string> PhaseCells(const PhaseResult& phase);
Table PhaseTable(const std::string& title, const std::vector<PhaseResult>& phases);

// The thresholds the options set, checked on this node's phases: storage.throughput.low,
// storage.latency.high and (whatever the options) storage.data.wrong, about `subject`.
void AddThresholdFindings(const StorageBenchOptions& options,
                          const std::vector<PhaseResult>& phases, const std::string& subject,
                          Report& report);

// This node's part: the FILESYSTEM and PHASES tables, the inventory (path, filesystem, the
// probe's options, phases; it replaces what was there) and the threshold findings.
void AddNodeResults(const StorageBenchOptions& options, const ProbeOptions& probe, const FsInfo& fs,
                    const std::vector<PhaseResult>& phases, Report& report);

// Every node's phases added up: bytes and operations of all, over the slowest node's time (the
// phases start together). Every node has the same phases, in the same order.
std::vector<PhaseResult> AggregatePhases(const std::vector<std::vector<PhaseResult>>& nodes);

// All nodes' part (`nodes[r]` is peers[r]'s): the NODES and AGGREGATE tables, their inventory,
// and storage.node.slow for a node whose write or read is a straggler.
void AddAllNodesResults(const std::vector<ranks::Peer>& peers,
                        const std::vector<std::vector<PhaseResult>>& nodes, double straggler_ratio,
                        Report& report);

}  // namespace tocsin::bench

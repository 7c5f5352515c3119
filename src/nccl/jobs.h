#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/report.h"
#include "nccl/analyzer.h"

namespace tocsin::nccl {

using ProcessKey = std::pair<std::string, int64_t>;  // (host, pid), as Analyzer::processes()

// Several jobs' logs given together (several files, or one stream) are several jobs. A job is
// what its processes' Init COMPLETE lines say: the communicators they share (commId and nranks,
// NCCL 2.19+; the communicators of one process are of one job). A communicator whose rank is
// held by two processes is not one communicator: it is told apart by the input it came from.
// A process without commId (init not complete yet, or NCCL before 2.19) goes with the one job
// of its input, else with the other such processes (older logs cannot be told apart: one job).
// Jobs come in the order of their first process.
std::vector<std::set<ProcessKey>> JobsOf(const Analyzer& analyzer);

// `tocsin nccl`'s report (findings, inventory, tables) of everything `analyzer` read: each
// job's findings from its own processes (a job is never compared with another), each process
// and finding naming its job ("job 2") when there are several.
void FillReport(const Analyzer& analyzer, Report& report);

}  // namespace tocsin::nccl

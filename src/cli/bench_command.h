#pragma once

#include <vector>

#include "cli/node_command.h"

namespace tocsin::cli {

// `tocsin bench net` (fabric benchmark across ranks, nccl-tests style).
std::vector<Command> AddBenchCommands(CLI::App& parent);

// The arguments tocsin was started with (for --local, which starts more ranks of itself).
void SetProcessArgs(int argc, char** argv);

}  // namespace tocsin::cli

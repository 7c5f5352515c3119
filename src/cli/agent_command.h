#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin agent`, the per-node daemon.
Command AddAgentCommand(CLI::App& parent);

}  // namespace tocsin::cli

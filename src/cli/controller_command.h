#pragma once

#include "cli/node_command.h"

namespace tocsin::cli {

// Registers `tocsin controller`, the cluster audit always on.
Command AddControllerCommand(CLI::App& parent);

}  // namespace tocsin::cli

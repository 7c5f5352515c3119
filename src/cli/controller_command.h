#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin controller`, the cluster audit always on.
Command AddControllerCommand(CLI::App& parent);

}  // namespace tocsin::cli

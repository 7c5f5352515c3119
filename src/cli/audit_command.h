#pragma once

#include "cli/node_command.h"

namespace tocsin::cli {

// Registers `tocsin audit`.
Command AddAuditCommand(CLI::App& parent);

}  // namespace tocsin::cli

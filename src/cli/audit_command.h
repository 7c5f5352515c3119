#pragma once

#include "cli/command.h"

namespace tocsin::cli {

// Registers `tocsin audit`.
Command AddAuditCommand(CLI::App& parent);

}  // namespace tocsin::cli

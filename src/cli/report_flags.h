#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "base/report.h"

namespace tocsin::cli {

// -o/--output, --fail-on, --observe-only: the report contract's flags, on every command.
struct ReportFlags {
  std::string output = "table";
  std::string fail_on = "error";
  bool observe_only = false;
  bool json_lines = false;  // -o json on one line (after a stream of JSON Lines: --follow)

  void AddTo(CLI::App* cmd);
  // Prints the report on stdout and returns the exit code.
  int Emit(const Report& report) const;
};

// Prints "tocsin: error: <message>" on stderr and returns kExitUsage.
int UsageError(const std::string& message);

}  // namespace tocsin::cli

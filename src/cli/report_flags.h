#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/report.h"

namespace tocsin::cli {

// -o/--output, --fail-on, --observe-only: the report contract's flags, on every command.
struct ReportFlags {
  std::string output = "table";
  std::string fail_on = "error";
  bool observe_only = false;
  bool json_lines = false;  // -o json on one line (after a stream of JSON Lines: --follow)

  // `formats`: what -o accepts (a command that renders more than table and json, such as
  // diff's junit and markdown, renders those itself and calls ExitCode).
  void AddTo(CLI::App* cmd, const std::vector<std::string>& formats = {"table", "json"});
  // The exit code for `report` under --fail-on and --observe-only.
  int ExitCode(const Report& report) const;
  // Prints the report on stdout and returns the exit code (by value: move a report in that is not
  // needed afterwards, and it is rendered without a copy).
  int Emit(Report report) const;
};

// Prints "tocsin: error: <message>" on stderr and returns kExitUsage.
int UsageError(const std::string& message);

}  // namespace tocsin::cli

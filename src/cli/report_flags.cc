#include "cli/report_flags.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace tocsin::cli {

void ReportFlags::AddTo(CLI::App* cmd, const std::vector<std::string>& formats) {
  std::string help = "Output format: table (for people) or json (scripts)";
  if (formats.size() > 2) {
    help = "Output format: " + formats[0];
    for (size_t i = 1; i < formats.size(); ++i) {
      help += (i + 1 == formats.size() ? " or " : ", ") + formats[i];
    }
  }
  cmd->add_option("-o,--output", output, help)
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  cmd->add_option("--fail-on", fail_on,
                  "Exit 1 when a finding is at or above this severity: info|warning|error|critical")
      ->check(CLI::IsMember({"info", "warning", "error", "critical"}))
      ->capture_default_str();
  cmd->add_flag("--observe-only", observe_only,
                "Report everything and exit 0 (new hardware whose expectations are not known)");
}

namespace {

// The terminal's width when stdout is one, else the renderer's default.
size_t TableWidth() {
  struct winsize ws {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) {
    return ws.ws_col;
  }
  return kTableWidth;
}

}  // namespace

int ReportFlags::Emit(Report report) const {
  OutputFormat format = output != "json" ? OutputFormat::kTable
                        : json_lines     ? OutputFormat::kJsonLine
                                         : OutputFormat::kJson;
  int code = ExitCode(report);
  std::string text = RenderReport(std::move(report), format, TableWidth());
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return code;
}

int ReportFlags::ExitCode(const Report& report) const {
  return ExitCodeFor(report, ParseSeverity(fail_on).value_or(Severity::kError), observe_only);
}

int UsageError(const std::string& message) {
  std::cerr << "tocsin: error: " << message << "\n";
  return kExitUsage;
}

}  // namespace tocsin::cli

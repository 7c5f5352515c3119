#pragma once

namespace tocsin::cli {

// `tocsin <command> [flags]`. Returns the process exit code (base/report.h ExitCode).
int Main(int argc, char** argv);

}  // namespace tocsin::cli

#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "base/report.h"
#include "cli/agent_command.h"
#include "cli/audit_command.h"
#include "cli/bench_command.h"
#include "cli/controller_command.h"
#include "cli/diff_command.h"
#include "cli/job_command.h"
#include "cli/nccl_command.h"
#include "cli/node_command.h"
#include "cli/policy_command.h"
#include "cli/rank_flags.h"
#include "sys/env.h"
#include "sys/huge_heap.h"
#include "tocsin/version.h"

namespace tocsin::cli {

int Main(int argc, char** argv) {
  try {
    CLI::App app{
        "tocsin: makes the silent failures of multi-node GPU training infrastructure loud "
        "(RDMA fabric, shared storage, placement).",
        "tocsin"};
    app.set_version_flag("--version", std::string("tocsin ") + kVersion);
    app.require_subcommand(1);
    SetProcessArgs(argc, argv);
    std::vector<Command> commands = {AddNodeCommand(app),       AddNcclCommand(app),
                                     AddAuditCommand(app),      AddAgentCommand(app),
                                     AddControllerCommand(app), AddDiffCommand(app),
                                     AddSnapshotCommand(app)};
    for (auto& c : AddBenchCommands(app)) commands.push_back(c);
    commands.push_back(AddPolicyCommand(app));
    commands.push_back(AddJobCommand(app));
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      int rc = app.exit(e);  // prints help, version or the error
      return rc == 0 ? kExitOk : kExitUsage;
    }
    for (const auto& c : commands) {
      if (!c.app->parsed()) continue;
      // The commands that decode a whole cluster's objects (sys/huge_heap.h).
      const std::string& name = c.app->get_name();
      if (name == "audit" || name == "diff" || name == "snapshot") {
        sys::ReexecWithHugeHeap(*NewRootedEnv(), argv);
      }
      return c.run();
    }
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "tocsin: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace tocsin::cli

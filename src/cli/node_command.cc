#include "cli/node_command.h"


#include <memory>

#include "cli/node_flags.h"
#include "cli/report_flags.h"
#include "node/node.h"
#include "sys/env.h"

namespace tocsin::cli {
namespace {

struct NodeCommandFlags {
  ReportFlags report;
  std::string root = "/";
  std::string profile;
  NodeFlags node;
};

int RunNode(CLI::App* cmd, const NodeCommandFlags& f) {
  if (Status st = CheckDirectory(f.root, "--root " + f.root); !st.ok()) {
    return UsageError(st.message());
  }
  node::Options options;
  if (!f.profile.empty()) {
    auto text = ReadRegularFile(f.profile);
    if (!text.ok()) return UsageError("--profile " + text.status().message());
    auto parsed = node::ParseProfile(*text, f.profile);
    if (!parsed.ok()) return UsageError("--profile " + parsed.status().message());
    options.expect = *parsed;
  }
  // Flags override the profile.
  if (Status applied = f.node.Apply(cmd, options); !applied.ok()) {
    return UsageError(applied.message());
  }

  auto env = NewRootedEnv(f.root);
  Report report = node::BuildReport(*env, options);
  return f.report.Emit(std::move(report));
}

}  // namespace

Command AddNodeCommand(CLI::App& parent) {
  auto flags = std::make_shared<NodeCommandFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "node",
      "Inspect this node: RDMA ports, NICs, GPUs and their PCIe/NUMA affinity, shared "
      "filesystem mounts, Lustre client state");
  flags->report.AddTo(cmd);
  cmd->add_option("--root", flags->root,
                  "Read the host under this directory (a fixture tree stands in for a node)")
      ->capture_default_str();
  cmd->add_option("--profile", flags->profile, "YAML file with expect-* keys; flags override it");
  flags->node.AddTo(cmd);
  return {cmd, [cmd, flags] { return RunNode(cmd, *flags); }};
}

}  // namespace tocsin::cli

#include "cli/node_command.h"

#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "cli/report_flags.h"
#include "node/node.h"

namespace tocsin::cli {
namespace {

struct NodeFlags {
  ReportFlags report;
  std::string root = "/";
  std::string profile;
  int expect_rdma_ports = 0;
  double expect_rate = 0;
  std::string expect_link_layer;
  int expect_gpus = 0;
  std::vector<std::string> expect_mounts;
  std::string nvml_library = gpu::kNvmlLibrary;
  double nvml_timeout_s = 10;
};

int RunNode(CLI::App* cmd, const NodeFlags& f) {
  struct stat st;
  if (::stat(f.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return UsageError("--root " + f.root + ": not a directory");
  }
  node::Options options;
  if (!f.profile.empty()) {
    std::ifstream in(f.profile);
    if (!in) return UsageError("--profile " + f.profile + ": cannot read the file");
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = node::ParseProfile(text.str(), f.profile);
    if (!parsed.ok()) return UsageError("--profile " + parsed.status().message());
    options.expect = *parsed;
  }
  // Flags override the profile.
  if (cmd->count("--expect-rdma-ports")) options.expect.rdma.active_ports = f.expect_rdma_ports;
  if (cmd->count("--expect-rate")) options.expect.rdma.min_rate_gbps = f.expect_rate;
  if (cmd->count("--expect-link-layer")) {
    Status st_ll = node::ValidateLinkLayer(f.expect_link_layer);
    if (!st_ll.ok()) return UsageError("--expect-link-layer: " + st_ll.message());
    options.expect.rdma.link_layer = f.expect_link_layer;
  }
  if (cmd->count("--expect-gpus")) options.expect.gpus = f.expect_gpus;
  if (cmd->count("--expect-mount")) {
    options.expect.mounts.clear();
    for (const auto& spec : f.expect_mounts) {
      auto m = storage::ParseMountExpectation(spec);
      if (!m.ok()) return UsageError(m.status().message());
      options.expect.mounts.push_back(*m);
    }
  }
  options.nvml_library = f.nvml_library;
  options.nvml_library_explicit = cmd->count("--nvml-library") > 0;
  options.nvml_timeout = std::chrono::milliseconds(static_cast<int64_t>(f.nvml_timeout_s * 1000));

  auto env = NewRootedEnv(f.root);
  Report report = node::BuildReport(*env, options);
  return f.report.Emit(report);
}

}  // namespace

Command AddNodeCommand(CLI::App& parent) {
  auto flags = std::make_shared<NodeFlags>();
  CLI::App* cmd = parent.add_subcommand(
      "node",
      "Inspect this node: RDMA ports, NICs, GPUs and their PCIe/NUMA affinity, shared "
      "filesystem mounts, Lustre client state");
  flags->report.AddTo(cmd);
  cmd->add_option("--root", flags->root,
                  "Read the host under this directory (a fixture tree stands in for a node)")
      ->capture_default_str();
  cmd->add_option("--profile", flags->profile, "YAML file with expect-* keys; flags override it");
  cmd->add_option("--expect-rdma-ports", flags->expect_rdma_ports,
                  "Number of RDMA ports that must be ACTIVE")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--expect-rate", flags->expect_rate, "Minimum link rate per port, in Gb/s")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--expect-link-layer", flags->expect_link_layer, "InfiniBand or Ethernet");
  cmd->add_option("--expect-gpus", flags->expect_gpus, "Number of GPUs on the PCI bus")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--expect-mount", flags->expect_mounts,
                  "PATH[:FSTYPE] that must be a mount point (repeatable)");
  cmd->add_option("--nvml-library", flags->nvml_library,
                  "NVML library to dlopen (asked only when --root is / or this is given)")
      ->capture_default_str();
  cmd->add_option("--nvml-timeout", flags->nvml_timeout_s,
                  "Seconds to wait for NVML before reporting it hung")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return {cmd, [cmd, flags] { return RunNode(cmd, *flags); }};
}

}  // namespace tocsin::cli

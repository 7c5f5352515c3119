#include "cli/node_flags.h"
#include "cli/number_flags.h"

namespace tocsin::cli {

void NodeFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--expect-rdma-ports", expect_rdma_ports,
                  "Number of RDMA ports that must be ACTIVE")
      ->check(Count(0, 4096));
  cmd->add_option("--expect-rate", expect_rate, "Minimum link rate per port, in Gb/s")
      ->check(Number(0.001, 1e6));
  cmd->add_option("--expect-link-layer", expect_link_layer, "InfiniBand or Ethernet");
  cmd->add_option("--expect-gpus", expect_gpus, "Number of GPUs on the PCI bus")
      ->check(Count(0, 4096));
  cmd->add_option("--expect-mount", expect_mounts,
                  "PATH[:FSTYPE] that must be a mount point (repeatable)");
  cmd->add_option("--nvml-library", nvml_library,
                  "NVML library to dlopen (asked only when --root is / or this is given)")
      ->capture_default_str();
  cmd->add_option("--nvml-timeout", nvml_timeout_s,
                  "Seconds to wait for NVML before reporting it hung")
      ->check(Seconds())
      ->capture_default_str();
}

Status NodeFlags::Apply(const CLI::App* cmd, node::Options& options) const {
  if (cmd->count("--expect-rdma-ports")) options.expect.rdma.active_ports = expect_rdma_ports;
  if (cmd->count("--expect-rate")) options.expect.rdma.min_rate_gbps = expect_rate;
  if (cmd->count("--expect-link-layer")) {
    Status st = node::ValidateLinkLayer(expect_link_layer);
    if (!st.ok()) return st.WithPrefix("--expect-link-layer");
    options.expect.rdma.link_layer = expect_link_layer;
  }
  if (cmd->count("--expect-gpus")) options.expect.gpus = expect_gpus;
  if (cmd->count("--expect-mount")) {
    options.expect.mounts.clear();
    for (const auto& spec : expect_mounts) {
      auto m = storage::ParseMountExpectation(spec);
      if (!m.ok()) return m.status();
      options.expect.mounts.push_back(*m);
    }
  }
  options.nvml_library = nvml_library;
  options.nvml_library_explicit = cmd->count("--nvml-library") > 0;
  options.nvml_timeout = std::chrono::milliseconds(static_cast<int64_t>(nvml_timeout_s * 1000));
  return Status::Ok();
}

}  // namespace tocsin::cli

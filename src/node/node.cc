#include "node/node.h"

#include "gpu/checks.h"

namespace tocsin::node {
Inventory Collect(Env& env, const Options& options) {
  Inventory inv;
  inv.host = HostName(env);
  if (inv.host.empty()) inv.host = "unknown";
  inv.rdma = rdma::ScanDevices(env);
  inv.net = net::ScanNetdevs(env);
  inv.gpus = gpu::ScanGpus(env);
  inv.storage = storage::ScanStorage(env);
  inv.affinity = ComputeAffinity(inv.gpus, inv.rdma);
  if (env.root() == "/" || options.nvml_library_explicit) {
    std::vector<std::string> addresses;
    for (const auto& g : inv.gpus.gpus) addresses.push_back(g.pci_address);
    inv.gpus.nvml = gpu::QueryNvml(options.nvml_library, addresses, options.nvml_timeout);
  } else {
    inv.gpus.nvml.detail = "--root is not /: NVML describes this host, not the root";
  }
  return inv;
}

std::vector<Finding> Check(const Inventory& inv, const Expectations& expect) {
  std::vector<Finding> out;
  rdma::CheckScan(inv.rdma, expect.rdma, out);
  gpu::CheckScan(inv.gpus, expect.gpus, out);
  CheckAffinity(inv.affinity, inv.gpus, inv.rdma, out);
  storage::CheckScan(inv.storage, expect.mounts, out);
  SortFindings(out);
  return out;
}

Report BuildReport(Env& env, const Options& options) {
  Inventory inv = Collect(env, options);
  Report report;
  report.command = "node";
  report.host = inv.host;
  report.generated_at = env.Now();
  report.findings = Check(inv, options.expect);
  report.inventory = {{"root", env.root()},
                      {"rdma", rdma::ToJson(inv.rdma)},
                      {"netdevs", net::ToJson(inv.net)},
                      {"gpus", gpu::ToJson(inv.gpus)},
                      {"gpu_nic_affinity", ToJson(inv.affinity)},
                      {"storage", storage::ToJson(inv.storage)}};
  report.tables = InventoryTables(inv);
  return report;
}

}  // namespace tocsin::node

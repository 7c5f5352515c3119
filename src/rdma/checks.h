#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/finding.h"
#include "rdma/inventory.h"

namespace tocsin::rdma {

struct Expectations {
  std::optional<int> active_ports;        // --expect-rdma-ports
  std::optional<double> min_rate_gbps;    // --expect-rate
  std::optional<std::string> link_layer;  // --expect-link-layer
};

// rdma.device.missing, rdma.port.down, rdma.port.rate, rdma.port.link-layer, rdma.port.errors.
void CheckScan(const Scan& scan, const Expectations& expect, std::vector<Finding>& out);

std::string PortSubject(const Device& dev, const Port& port);

}  // namespace tocsin::rdma

#pragma once

#include <cstdint>
#include <string>

#include "k8s/fabric_facts.h"
#include "rdma/inventory.h"
#include "sys/env.h"

namespace tocsin::agent {

// Where the mlx5_core/MOFED driver version is: the module's MODULE_VERSION string. MOFED's
// mlx5_core sets it ("24.10-0.7.0"); an in-tree driver may have none.
inline constexpr char kMlx5VersionPath[] = "/sys/module/mlx5_core/version";

// The RDMA active MTU of a RoCE port whose netdev has MTU `netdev_mtu` bytes, as the kernel
// computes it (include/rdma/ib_addr.h `iboe_get_mtu`: the netdev MTU less the largest RoCE
// headers, 96 bytes, rounded down to an IB MTU; mlx5_query_port_roce caps it at 4096); 0 when
// below 256.
int RoceActiveMtu(int64_t netdev_mtu);

// The fabric facts this node publishes as the annotation tocsin.io/fabric (docs/FORMATS.md,
// "Fabric facts annotation"), from a scan of /sys/class/infiniband and, through `env`, the
// driver version and each RoCE port's netdev MTU. HCAs sorted by name, at most
// k8s::kMaxFabricHcas, strings cut as the decoder cuts them, so that what is published decodes
// to itself. What cannot be read is left empty (a missing fact never looks like a value).
k8s::FabricFacts CollectFabricFacts(const rdma::Scan& scan, Env& env);

}  // namespace tocsin::agent

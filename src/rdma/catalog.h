#pragma once

#include "base/check_catalog.h"

namespace tocsin::rdma {

// The rdma.* checks (src/rdma/checks.cc).
inline constexpr char kDeviceMissing[] = "rdma.device.missing";
inline constexpr char kPortDown[] = "rdma.port.down";
inline constexpr char kPortRate[] = "rdma.port.rate";
inline constexpr char kPortLinkLayer[] = "rdma.port.link-layer";
inline constexpr char kPortErrors[] = "rdma.port.errors";

const CheckCatalog& Catalog();

}  // namespace tocsin::rdma

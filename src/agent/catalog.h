#pragma once

#include "base/check_catalog.h"

namespace tocsin::agent {

// The checks only the agent emits (src/agent/fabric.cc, probe_task.cc).
inline constexpr char kFabricIdleWhileTcpBusy[] = "node.fabric.idle-while-tcp-busy";
inline constexpr char kStorageProbe[] = "storage.probe";

const CheckCatalog& Catalog();

}  // namespace tocsin::agent

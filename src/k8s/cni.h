#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace tocsin::k8s {

// What `tocsin diff` compares of a CNI network configuration (the JSON string in a
// NetworkAttachmentDefinition's spec.config; docs/FORMATS.md, "NetworkAttachmentDefinition"):
// a single plugin's config, or a list ("plugins": the first plugin is the network's).
struct CniConfig {
  std::string name;
  std::string type;       // macvlan, ipvlan, sriov, ib-sriov, host-device, ipoib, ...
  std::string master;     // "master" (macvlan, ipvlan, ipoib), else "device" (host-device)
  std::string mtu;        // as written: a number, or a string in older examples
  std::string ipam_type;  // ipam.type
};

// Configs over 64 KiB are refused; errors quote the offending text.
inline constexpr size_t kMaxCniConfig = 64 * 1024;
Result<CniConfig> ParseCniConfig(std::string_view text);

}  // namespace tocsin::k8s

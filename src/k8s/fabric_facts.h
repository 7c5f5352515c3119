#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tocsin::k8s {

// The fabric facts only a node knows, published by `tocsin agent` as the node annotation
// `tocsin.io/fabric` (docs/FORMATS.md, "Fabric facts annotation") and compared by `tocsin diff`:
// {"v":1,"driver":"...","hcas":[{"name","fw","board_id","link_layer","rate","mtu"}]}.
inline constexpr char kFabricFactsAnnotation[] = "tocsin.io/fabric";

struct HcaFacts {
  std::string name;        // mlx5_0
  std::string firmware;    // fw_ver
  std::string board_id;    // board_id
  std::string link_layer;  // port 1: InfiniBand, Ethernet
  std::string rate;        // port 1: "400 Gb/sec (4X NDR)"
  std::string mtu;         // port 1's active MTU, bytes
};

struct FabricFacts {
  std::string driver;  // the mlx5_core/MOFED version
  std::vector<HcaFacts> hcas;
};

// Caps: 16 KiB of text, 64 HCAs, 128 bytes a string (longer ones are cut); nesting is bounded
// while parsing. Unknown fields are skipped; a version other than 1 is an error. Encoding never
// throws: bytes that are not UTF-8 become U+FFFD, and HCAs past what fits in 16 KiB are left
// out from the end.
inline constexpr size_t kMaxFabricFactsBytes = 16 * 1024;
inline constexpr size_t kMaxFabricHcas = 64;
std::string EncodeFabricFacts(const FabricFacts& facts);
Result<FabricFacts> DecodeFabricFacts(std::string_view text);

}  // namespace tocsin::k8s

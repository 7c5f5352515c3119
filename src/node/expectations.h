#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "rdma/checks.h"
#include "storage/checks.h"

namespace tocsin::node {

// What this node should have. Unset means "no expectation": absence is then info, not an error.
struct Expectations {
  rdma::Expectations rdma;
  std::optional<int> gpus;
  std::vector<storage::MountExpectation> mounts;
};

// A --profile file: YAML mapping with the flag names as keys:
//   expect-rdma-ports: 8
//   expect-rate: 400
//   expect-link-layer: InfiniBand
//   expect-gpus: 8
//   expect-mount: [/mnt/lustre:lustre, /scratch]
// Unknown keys and wrong types are errors that name the key and the file.
Result<Expectations> ParseProfile(std::string_view yaml_text, const std::string& file);

// Shared by the flags and the profile.
Status ValidateLinkLayer(std::string_view value);

}  // namespace tocsin::node

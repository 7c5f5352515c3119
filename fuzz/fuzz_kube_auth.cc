// Kubeconfig YAML and exec credential plugin output (the two texts the live client trusts).
#include <cstddef>
#include <cstdint>
#include <string>

#include "k8s/exec_credential.h"
#include "k8s/kubeconfig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // File references resolve under a folder that does not exist: no host file is read.
  tocsin::k8s::ParseKubeconfig(text, "/nonexistent/tocsin-fuzz/config", "");
  tocsin::k8s::ParseExecCredential(text, "client.authentication.k8s.io/v1", "fuzz");
  return 0;
}

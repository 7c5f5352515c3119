// Kubernetes snapshot decoding (kubectl -o json Lists and objects).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "k8s/decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tocsin::k8s::Snapshot snapshot;
  tocsin::k8s::ListMeta meta;  // a list page's continue token and resourceVersion
  tocsin::k8s::DecodeJson(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                          snapshot, &meta);
  return 0;
}

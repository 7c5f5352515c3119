// Watch stream events (one JSON line each), as the controller's informers decode them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "k8s/watch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tocsin::k8s::WatchEvent event;
  tocsin::k8s::DecodeWatchEvent(std::string_view(reinterpret_cast<const char*>(data), size), "Pod",
                                "fuzz", event);
  return 0;
}

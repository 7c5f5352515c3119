#include "k8s/curl_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace tocsin::k8s {
namespace {

constexpr const char* kLibrary = "libcurl.so.4";

template <typename F>
bool Resolve(void* lib, const char* symbol, F& out, std::string& missing) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (out == nullptr && missing.empty()) missing = symbol;
  return out != nullptr;
}

}  // namespace

Result<const CurlApi*> LoadCurl() {
  static std::once_flag once;
  static CurlApi api{};
  static Status status;
  std::call_once(once, [] {
    void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      status = Status::Unavailable(std::string("cannot load ") + kLibrary +
                                   " (libcurl4): " + (err ? err : "dlopen failed"));
      return;
    }
    std::string missing;
    Resolve(lib, "curl_global_init", api.global_init, missing);
    Resolve(lib, "curl_easy_init", api.easy_init, missing);
    Resolve(lib, "curl_easy_setopt", api.easy_setopt, missing);
    Resolve(lib, "curl_easy_perform", api.easy_perform, missing);
    Resolve(lib, "curl_easy_getinfo", api.easy_getinfo, missing);
    Resolve(lib, "curl_easy_cleanup", api.easy_cleanup, missing);
    Resolve(lib, "curl_easy_strerror", api.easy_strerror, missing);
    Resolve(lib, "curl_easy_escape", api.easy_escape, missing);
    Resolve(lib, "curl_free", api.free, missing);
    Resolve(lib, "curl_slist_append", api.slist_append, missing);
    Resolve(lib, "curl_slist_free_all", api.slist_free_all, missing);
    if (!missing.empty()) {
      status = Status::Unavailable(std::string(kLibrary) + " has no symbol " + missing);
      return;
    }
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      status = Status::Unavailable("curl_global_init failed");
    }
  });
  if (!status.ok()) return status;
  return &api;
}

}  // namespace tocsin::k8s

#include "sys/module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <mutex>

#include "base/strings.h"

namespace tocsin::sys {

std::vector<std::string> ModuleCandidates(std::string_view exe_path, std::string_view file,
                                          std::string_view build_path) {
  std::vector<std::string> out;
  size_t slash = exe_path.rfind('/');
  if (slash != std::string_view::npos) {
    std::string dir(exe_path.substr(0, slash));
    out.push_back(dir + "/" + std::string(file));
    out.push_back(dir + "/../lib/tocsin/" + std::string(file));
  }
  if (!build_path.empty() && std::find(out.begin(), out.end(), build_path) == out.end()) {
    out.emplace_back(build_path);
  }
  return out;
}

Result<void*> LoadModuleSymbol(std::string_view file, std::string_view build_path,
                               const char* symbol) {
  static std::mutex mu;  // dlerror's state is per thread, but one loader at a time is simpler
  std::lock_guard<std::mutex> lock(mu);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string exe_path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  std::vector<std::string> tried = ModuleCandidates(exe_path, file, build_path);
  for (const auto& path : tried) {
    if (access(path.c_str(), R_OK) != 0) continue;
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* err = dlerror();
      return Status::Unavailable("cannot load " + path + ": " + (err ? err : "dlopen failed"));
    }
    void* fn = dlsym(lib, symbol);
    if (fn == nullptr) {
      return Status::Unavailable(path + " has no " + symbol +
                                 " (a module from another tocsin version?)");
    }
    return fn;
  }
  return Status::Unavailable("tocsin's module " + std::string(file) +
                             " is not installed (looked in " + Join(tried, ", ") + ")");
}

}  // namespace tocsin::sys

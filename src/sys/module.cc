#include "sys/module.h"

#include <dlfcn.h>
#include <link.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <map>
#include <cstring>
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

namespace {

// Opens `path` for loading: a regular file, not a link, owned by root or the effective user,
// not writable by group or others. -1 and *why when it is refused.
int OpenTrusted(const std::string& path, std::string* why) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *why = path + ": " + strerror(errno);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = path + " is not a regular file";
  } else if (st.st_uid != 0 && st.st_uid != geteuid()) {
    *why = path + " is owned by uid " + std::to_string(st.st_uid) + ", neither root nor this user";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    *why = path + " is writable by others than its owner";
  } else {
    return fd;
  }
  close(fd);
  return -1;
}

// Opens `path` (OpenTrusted) and dlopens that very descriptor. The descriptor stays open for the
// life of the process: glibc knows a loaded object by its name, and a closed descriptor's
// number (so its /proc/self/fd name) would be reused by the next module, which dlopen would then
// take for this one.
Result<void*> OpenAndLoad(const std::string& path) {
  std::string why;
  int fd = OpenTrusted(path, &why);
  if (fd < 0) return Status::Unavailable("refusing to load " + why);
  void* lib = dlopen(("/proc/self/fd/" + std::to_string(fd)).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    close(fd);
    const char* err = dlerror();
    return Status::Unavailable("cannot load " + path + ": " + (err ? err : "dlopen failed"));
  }
  return lib;
}

}  // namespace

Result<void*> LoadModuleSymbol(std::string_view file, std::string_view build_path,
                               std::string_view build_id, const char* symbol) {
  static std::mutex mu;  // dlerror's state is per thread, but one loader at a time is simpler
  std::lock_guard<std::mutex> lock(mu);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  std::string exe_path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  std::vector<std::string> tried = ModuleCandidates(exe_path, file, build_path);
  for (const auto& path : tried) {
    if (access(path.c_str(), F_OK) != 0) continue;
    static std::map<std::string, void*> loaded;  // each file once (one descriptor each)
    void* lib = nullptr;
    if (auto it = loaded.find(path); it != loaded.end()) lib = it->second;
    if (lib == nullptr) {
      auto opened = OpenAndLoad(path);
      if (!opened.ok()) return opened.status();
      lib = loaded[path] = *opened;
    }
    // dlsym on a handle may answer from another object (a library loaded before, the global
    // scope): only a symbol defined in this very file counts.
    auto own = [lib](const char* name) -> void* {
      void* sym = dlsym(lib, name);
      struct link_map* mine = nullptr;
      struct link_map* where = nullptr;
      Dl_info info{};
      if (sym == nullptr || dlinfo(lib, RTLD_DI_LINKMAP, &mine) != 0 ||
          dladdr1(sym, &info, reinterpret_cast<void**>(&where), RTLD_DL_LINKMAP) == 0 ||
          where != mine) {
        return nullptr;
      }
      return sym;
    };
    auto id_fn = reinterpret_cast<const char* (*)()>(own(kModuleBuildIdSymbol));
    if (id_fn == nullptr || build_id != id_fn()) {
      return Status::Unavailable(path + " is from another build of tocsin (its build id " +
                                 (id_fn ? Quote(id_fn()) : std::string("is missing")) +
                                 ", this binary's " + Quote(build_id) +
                                 "): install the module that came with this binary");
    }
    void* fn = own(symbol);
    if (fn == nullptr) return Status::Unavailable(path + " has no " + symbol);
    return fn;
  }
  return Status::Unavailable("tocsin's module " + std::string(file) +
                             " is not installed (looked in " + Join(tried, ", ") + ")");
}

}  // namespace tocsin::sys

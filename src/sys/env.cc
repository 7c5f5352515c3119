#include "sys/env.h"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "base/strings.h"

namespace tocsin {
namespace {

constexpr int kMaxSymlinks = 40;  // as the kernel's ELOOP limit

Status ErrnoStatus(int err, std::string_view path) {
  std::string msg = std::string(path) + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return Status::NotFound(msg);
  return Status::IoError(msg);
}

std::string_view FileKind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

// Reads `fd` to its end and closes it.
Result<std::string> ReadAll(int fd, std::string_view name, size_t max_bytes) {
  std::string data;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoStatus(err, name);
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > max_bytes) {
      ::close(fd);
      return Status::IoError(std::string(name) + ": larger than " + std::to_string(max_bytes) +
                             " bytes");
    }
  }
  ::close(fd);
  return data;
}

class RootedEnv : public Env {
 public:
  explicit RootedEnv(std::string root) : root_(std::move(root)) {
    prefix_ = root_;
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    if (root_.empty()) root_.assign(1, '/');  // not = "/": GCC 12 -O2 warns (-Wrestrict, a false positive)
  }

  Result<std::string> ReadFile(std::string_view path, size_t max_bytes) override {
    TOCSIN_ASSIGN_OR_RETURN(std::string real, Resolve(path));
    TOCSIN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(Host(real), O_NOFOLLOW, path));
    return ReadAll(fd, path, max_bytes);
  }

  Result<int> OpenFile(std::string_view path) override {
    TOCSIN_ASSIGN_OR_RETURN(std::string real, Resolve(path));
    return OpenRegularFile(Host(real), O_NOFOLLOW, path);
  }

  Result<std::vector<std::string>> ListDir(std::string_view path) override {
    TOCSIN_ASSIGN_OR_RETURN(std::string real, Resolve(path));
    DIR* dir = ::opendir(Host(real).c_str());
    if (dir == nullptr) return ErrnoStatus(errno, path);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(dir)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<std::string> ReadLink(std::string_view path) override {
    // Resolve the parent, keep the last component unresolved.
    std::string p(path);
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    size_t slash = p.rfind('/');
    if (slash == std::string::npos) return Status::InvalidArgument(p + ": not an absolute path");
    std::string parent = slash == 0 ? "/" : p.substr(0, slash);
    TOCSIN_ASSIGN_OR_RETURN(std::string real_parent, Resolve(parent));
    std::string host = Host(fmt::format("{}/{}", real_parent == "/" ? "" : real_parent,
                                        std::string_view(p).substr(slash + 1)));
    char buf[4096];
    ssize_t n = ::readlink(host.c_str(), buf, sizeof(buf) - 1);
    if (n < 0) return ErrnoStatus(errno, path);
    return std::string(buf, static_cast<size_t>(n));
  }

  Result<std::string> RealPath(std::string_view path) override { return Resolve(path); }

  bool IsDirectory(std::string_view path) override {
    auto real = Resolve(path);
    if (!real.ok()) return false;
    struct stat st;
    return ::stat(Host(*real).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<FsStats> StatFs(std::string_view path) override {
    TOCSIN_ASSIGN_OR_RETURN(std::string real, Resolve(path));
    struct statfs s;
    if (::statfs(Host(real).c_str(), &s) != 0) return ErrnoStatus(errno, path);
    FsStats out;
    out.type = static_cast<uint64_t>(s.f_type);
    out.block_size = static_cast<uint64_t>(s.f_bsize);
    out.blocks = s.f_blocks;
    out.blocks_free = s.f_bfree;
    out.blocks_available = s.f_bavail;
    out.files = s.f_files;
    out.files_free = s.f_ffree;
    return out;
  }

  TimePoint Now() override { return Clock::now(); }
  const std::string& root() const override { return root_; }

 private:
  std::string Host(const std::string& real) const { return prefix_ + real; }

  // Walks `path` component by component under the root, following symlinks; ".." never climbs
  // above the root.
  Result<std::string> Resolve(std::string_view path) const {
    if (path.empty() || path[0] != '/') {
      return Status::InvalidArgument(std::string(path) + ": not an absolute path");
    }
    std::deque<std::string> todo;
    for (auto c : Split(path, '/', true)) todo.emplace_back(c);
    std::vector<std::string> done;
    int links = 0;
    while (!todo.empty()) {
      std::string comp = std::move(todo.front());
      todo.pop_front();
      if (comp == ".") continue;
      if (comp == "..") {
        if (!done.empty()) done.pop_back();
        continue;
      }
      done.push_back(comp);
      std::string host = prefix_ + "/" + Join(done, "/");
      struct stat st;
      if (::lstat(host.c_str(), &st) != 0) {
        int err = errno;
        std::string at(1, '/');
        at += Join(done, "/");
        if (at == path) return ErrnoStatus(err, path);
        return ErrnoStatus(err, std::string(path) + " (at " + at + ")");
      }
      if (!S_ISLNK(st.st_mode)) continue;
      if (++links > kMaxSymlinks) {
        return Status::IoError(std::string(path) + ": too many levels of symbolic links");
      }
      char buf[4096];
      ssize_t n = ::readlink(host.c_str(), buf, sizeof(buf) - 1);
      if (n < 0) return ErrnoStatus(errno, path);
      std::string_view target(buf, static_cast<size_t>(n));
      done.pop_back();
      if (!target.empty() && target[0] == '/') done.clear();
      auto parts = Split(target, '/', true);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) todo.emplace_front(*it);
    }
    std::string out(1, '/');
    out += Join(done, "/");
    return out;
  }

  std::string root_;
  std::string prefix_;  // root without trailing slash; "" for "/"
};

}  // namespace

std::unique_ptr<Env> NewRootedEnv(std::string root) {
  return std::make_unique<RootedEnv>(std::move(root));
}

Result<int> OpenRegularFile(const std::string& path, int flags, std::string_view name) {
  if (name.empty()) name = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
  if (fd < 0) return ErrnoStatus(errno, name);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoStatus(err, name);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IoError(std::string(name) + ": not a regular file (" +
                           std::string(FileKind(st.st_mode)) + ")");
  }
  return fd;
}

Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes) {
  TOCSIN_ASSIGN_OR_RETURN(int fd, OpenRegularFile(path));
  return ReadAll(fd, path, max_bytes);
}

Status CheckDirectory(const std::string& path, std::string_view name) {
  if (name.empty()) name = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, name);
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(std::string(name) + ": not a directory (" +
                                   std::string(FileKind(st.st_mode)) + ")");
  }
  return Status::Ok();
}

Result<std::string> ReadAttribute(Env& env, std::string_view path) {
  TOCSIN_ASSIGN_OR_RETURN(std::string text, env.ReadFile(path, 64 << 10));
  return std::string(Trim(text));
}

std::string HostName(Env& env) {
  auto h = ReadAttribute(env, "/proc/sys/kernel/hostname");
  if (h.ok() && !h->empty()) return *h;
  if (env.root() == "/") {
    char buf[256] = {};
    if (::gethostname(buf, sizeof(buf) - 1) == 0) return buf;
  }
  return "";
}

}  // namespace tocsin

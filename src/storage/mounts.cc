#include "storage/mounts.h"

#include <array>

#include "base/strings.h"

namespace tocsin::storage {
namespace {

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

}  // namespace

std::string UnescapeMountField(std::string_view f) {
  std::string out;
  out.reserve(f.size());
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '\\' && i + 3 < f.size() && IsOctal(f[i + 1]) && IsOctal(f[i + 2]) &&
        IsOctal(f[i + 3])) {
      int v = (f[i + 1] - '0') * 64 + (f[i + 2] - '0') * 8 + (f[i + 3] - '0');
      out += static_cast<char>(v & 0xff);
      i += 3;
    } else {
      out += f[i];
    }
  }
  return out;
}

namespace {

// Runs `parse` on each non-blank line; a line it rejects (an error text) is recorded with its
// number and the rest still parse.
template <typename LineParser>
MountTable ParseLines(std::string_view text, LineParser parse) {
  MountTable table;
  size_t line_no = 0;
  for (auto line : Split(text, '\n')) {
    ++line_no;
    if (Trim(line).empty()) continue;
    Mount m;
    std::string error = parse(SplitWhitespace(line), m);
    if (error.empty()) {
      table.mounts.push_back(std::move(m));
    } else {
      table.errors.push_back("line " + std::to_string(line_no) + ": " + error + ", got " +
                             Quote(line));
    }
  }
  return table;
}

}  // namespace

MountTable ParseMountInfo(std::string_view text) {
  return ParseLines(text, [](const std::vector<std::string_view>& f, Mount& m) -> std::string {
    // 6 fixed fields, optional fields, "-", type, source, super options (may be empty).
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 6 || dash + 2 >= f.size()) return "expected \"... - TYPE SOURCE OPTIONS\"";
    if (!ParseInt64(f[0]) || !ParseInt64(f[1]) || f[2].find(':') == std::string_view::npos) {
      return "bad mount id or device";
    }
    m.root = UnescapeMountField(f[3]);
    m.mount_point = UnescapeMountField(f[4]);
    m.options = std::string(f[5]);
    m.fstype = UnescapeMountField(f[dash + 1]);
    m.source = UnescapeMountField(f[dash + 2]);
    return "";
  });
}

MountTable ParseProcMounts(std::string_view text) {
  return ParseLines(text, [](const std::vector<std::string_view>& f, Mount& m) -> std::string {
    if (f.size() < 4) return "expected \"SOURCE POINT TYPE OPTIONS ...\"";
    m.source = UnescapeMountField(f[0]);
    m.mount_point = UnescapeMountField(f[1]);
    m.fstype = UnescapeMountField(f[2]);
    m.options = std::string(f[3]);
    return "";
  });
}

bool IsSharedFsType(std::string_view t) {
  static constexpr std::array<std::string_view, 9> kShared = {
      "lustre", "nfs", "nfs4", "beegfs", "gpfs", "wekafs", "ceph", "cephfs", "glusterfs"};
  for (auto s : kShared) {
    if (t == s) return true;
  }
  // FUSE filesystems are usually network or object stores (juicefs, gcsfuse, s3fs,
  // ceph-fuse, weka); these local helpers are not.
  static constexpr std::array<std::string_view, 4> kLocalFuse = {
      "fuse.lxcfs", "fuse.portal", "fuse.gvfsd-fuse", "fuse.snapfuse"};
  if (t.substr(0, 5) == "fuse.") {
    for (auto s : kLocalFuse) {
      if (t == s) return false;
    }
    return true;
  }
  return false;
}

bool IsLustreTarget(const Mount& m) {
  if (m.fstype == "lustre_tgt") return true;
  return (m.fstype == "lustre" || m.fstype == "lustre_lite") &&
         m.source.find(":/") == std::string::npos;
}

bool IsSharedMount(const Mount& m) { return IsSharedFsType(m.fstype) && !IsLustreTarget(m); }

const Mount* FindMount(const MountTable& table, std::string_view path) {
  std::string_view want = path;
  while (want.size() > 1 && want.back() == '/') want.remove_suffix(1);
  const Mount* found = nullptr;
  for (const auto& m : table.mounts) {
    if (m.mount_point == want) found = &m;
  }
  return found;
}

const Mount* MountHolding(const MountTable& table, std::string_view path) {
  const Mount* best = nullptr;
  for (const auto& m : table.mounts) {
    std::string_view mp = m.mount_point;
    bool under = path == mp || mp == "/" ||
                 (path.starts_with(mp) && path.size() > mp.size() && path[mp.size()] == '/');
    if (under && (!best || mp.size() >= best->mount_point.size())) best = &m;
  }
  return best;
}

}  // namespace tocsin::storage

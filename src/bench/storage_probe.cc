#include "bench/storage_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <optional>
#include <random>
#include <thread>

#include "bench/block_pattern.h"
#include "bench/direct_buffer.h"

namespace tocsin::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch())
      .count();
}

std::string Errno() { return strerror(errno); }

}  // namespace

struct Worker {
  std::atomic<int64_t> op_start_ns{0};  // 0: not inside an operation
  std::string path;                     // set before the phase starts
  std::vector<int64_t> lat_ns;
  int64_t first_ns = 0, last_ns = 0;  // the first timed operation's start, the last one's end
  uint64_t bytes = 0, ops = 0;
  int64_t wrong = -1;
  double resident = -1;  // share of the file in the page cache before reading (-1: unknown)
  Status error;
};

// Every file of the probe is opened relative to its folder's descriptor, never by following a
// link: a link or a file planted in the folder is refused, not written through (O_NOFOLLOW on
// every open, O_EXCL on every creation, the folder itself opened with O_NOFOLLOW).
struct StorageProbe::Shared {
  ~Shared() {
    if (dir_fd >= 0) close(dir_fd);
  }
  ProbeOptions o;
  int dir_fd = -1;
  int dir_errno = 0;  // why the folder could not be opened
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::string> created;  // guarded by mu
  std::string pattern;

  void Created(const std::string& p) {
    std::lock_guard<std::mutex> l(mu);
    if (std::find(created.begin(), created.end(), p) == created.end()) created.push_back(p);
  }
  std::string DataName(int w) const {
    return o.shared_file ? "shared.dat" : "data-" + std::to_string(w) + ".dat";
  }
  std::string DataFile(int w) const { return o.dir + "/" + DataName(w); }
  uint64_t Base(int w) const { return o.shared_file ? o.size * w : 0; }
  uint64_t FileId(int w) const { return o.shared_file ? 0 : w; }
};

namespace {

using Shared = StorageProbe::Shared;

// Times one operation; the watchdog sees op_start_ns while it runs.
template <typename F>
auto Timed(Worker& wk, F op) {
  int64_t start = NowNs();
  wk.op_start_ns.store(start);
  auto r = op();
  int64_t end = NowNs();
  wk.op_start_ns.store(0);
  wk.lat_ns.push_back(end - start);
  if (wk.first_ns == 0) wk.first_ns = start;
  wk.last_ns = end;
  return r;
}

// Opens `name` in `dir_fd` without following a link. A creation is exclusive, except for the
// file shared by all workers (`shared`), which each worker may find made by another: then it
// must be a regular file with one link, as made by this process's user.
int OpenIn(int dir_fd, const std::string& name, int flags, bool shared = false) {
  if (dir_fd < 0) {
    errno = EBADF;
    return -1;
  }
  int base = flags | O_CLOEXEC | O_NOFOLLOW;
  int fd = openat(dir_fd, name.c_str(), (flags & O_CREAT) ? base | O_EXCL : base, 0644);
  if (fd >= 0 || !(shared && (flags & O_CREAT) && errno == EEXIST)) return fd;
  fd = openat(dir_fd, name.c_str(), base & ~O_CREAT);
  if (fd < 0) return fd;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != geteuid()) {
    close(fd);
    errno = EEXIST;
    return -1;
  }
  return fd;
}

// Why an open failed: a link where the probe's file should be is named as such.
std::string OpenError(const Shared& s) {
  if (s.dir_fd < 0) return "probe folder " + s.o.dir + ": " + strerror(s.dir_errno);
  if (errno == ELOOP || errno == EEXIST) {
    return "already there, not made by the probe (a planted link or file?): refused, not followed";
  }
  return Errno();
}

int OpenData(Shared& s, int w, int flags) {
  if (s.o.direct) flags |= O_DIRECT;
  int fd = OpenIn(s.dir_fd, s.DataName(w), flags, s.o.shared_file);
  if (fd < 0 && errno == EINVAL && s.o.direct) {
    return -2;  // the filesystem refuses O_DIRECT
  }
  return fd;
}

Status WritePhase(Shared& s, int w, Worker& wk) {
  int fd = OpenData(s, w, O_WRONLY);  // made by prepare-write
  if (fd == -2) return Status::InvalidArgument("O_DIRECT is not supported here");
  if (fd < 0) return Status::IoError(wk.path + ": open: " + OpenError(s));
  AlignedBuffer buf(s.o.block);
  std::memcpy(buf.data, s.pattern.data(), s.o.block);
  uint64_t blocks = s.o.size / s.o.block;
  Status st;
  for (uint64_t b = 0; b < blocks && !s.stop.load(); ++b) {
    StampBlock(static_cast<char*>(buf.data), s.FileId(w), s.Base(w) / s.o.block + b);
    ssize_t n = Timed(wk, [&] {
      return pwrite(fd, buf.data, s.o.block, static_cast<off_t>(s.Base(w) + b * s.o.block));
    });
    if (n != static_cast<ssize_t>(s.o.block)) {
      st = Status::IoError(wk.path + ": write: " + (n < 0 ? Errno() : "short write"));
      break;
    }
    wk.bytes += n;
    ++wk.ops;
  }
  // A checkpoint is written when fsync returns: the final fsync is part of the phase.
  if (st.ok()) {
    int rc = Timed(wk, [&] { return fsync(fd); });
    wk.lat_ns.pop_back();  // timed for the watchdog; not a block write's latency
    if (rc != 0) st = Status::IoError(wk.path + ": fsync: " + Errno());
  }
  close(fd);
  return st;
}

// Drops the file's pages from the cache and measures how much stayed (mincore).
void DropCache(Shared& s, int w, Worker& wk) {
  int fd = OpenIn(s.dir_fd, s.DataName(w), O_RDONLY);
  if (fd < 0) return;
  wk.op_start_ns.store(NowNs());
  posix_fadvise(fd, static_cast<off_t>(s.Base(w)), static_cast<off_t>(s.o.size),
                POSIX_FADV_DONTNEED);
  void* map = mmap(nullptr, s.o.size, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(s.Base(w)));
  if (map != MAP_FAILED) {
    size_t pages = (s.o.size + 4095) / 4096;
    std::vector<unsigned char> vec(pages);
    if (mincore(map, s.o.size, vec.data()) == 0) {
      size_t in = 0;
      for (unsigned char v : vec) in += v & 1;
      wk.resident = static_cast<double>(in) / pages;
    }
    munmap(map, s.o.size);
  }
  wk.op_start_ns.store(0);
  close(fd);
}

Status ReadPhase(Shared& s, int w, Worker& wk) {
  int fd = OpenData(s, w, O_RDONLY);
  if (fd == -2) return Status::InvalidArgument("O_DIRECT is not supported here");
  if (fd < 0) return Status::IoError(wk.path + ": open: " + OpenError(s));
  // As fio's fadvise_hint: a streaming reader says so (a larger readahead window).
  posix_fadvise(fd, static_cast<off_t>(s.Base(w)), static_cast<off_t>(s.o.size),
                POSIX_FADV_SEQUENTIAL);
  // Two buffers when checking large blocks: the next read overlaps the check of the last one.
  bool overlap = s.o.check && s.o.block >= (64u << 10);
  AlignedBuffer bufs[2] = {AlignedBuffer(s.o.block), AlignedBuffer(overlap ? s.o.block : 0)};
  std::optional<BlockChecker> checker;
  if (overlap) checker.emplace(s.pattern, s.FileId(w), s.o.block);
  uint64_t blocks = s.o.size / s.o.block;
  int64_t wrong = 0;
  Status st;
  for (uint64_t b = 0; b < blocks && !s.stop.load(); ++b) {
    uint64_t off = s.Base(w) + b * s.o.block;
    char* buf = static_cast<char*>(bufs[overlap ? b % 2 : 0].data);
    ssize_t n = Timed(wk, [&] { return pread(fd, buf, s.o.block, static_cast<off_t>(off)); });
    if (n != static_cast<ssize_t>(s.o.block)) {
      st = Status::IoError(wk.path + ": read at " + std::to_string(off) + ": " +
                           (n < 0 ? Errno() : "short read"));
      break;
    }
    wk.bytes += n;
    ++wk.ops;
    if (checker) {
      checker->Submit(buf, off / s.o.block);
    } else if (s.o.check) {
      wrong += BlockMatches(buf, s.o.block, s.pattern, s.FileId(w), off / s.o.block) ? 0 : 1;
    }
  }
  if (s.o.check) wk.wrong = wrong + (checker ? checker->Wrong() : 0);
  checker.reset();  // joins its thread before the buffers it reads go
  close(fd);
  return st;
}

Status RandReadPhase(Shared& s, int w, Worker& wk) {
  int fd = OpenData(s, w, O_RDONLY);
  if (fd == -2) return Status::InvalidArgument("O_DIRECT is not supported here");
  if (fd < 0) return Status::IoError(wk.path + ": open: " + OpenError(s));
  posix_fadvise(fd, static_cast<off_t>(s.Base(w)), static_cast<off_t>(s.o.size), POSIX_FADV_RANDOM);
  AlignedBuffer buf(4096);
  uint64_t pages = s.o.size / 4096;
  uint64_t ops = std::min<uint64_t>(s.o.randread_ops, pages);
  std::mt19937_64 rng(1234 + w);
  for (uint64_t i = 0; i < ops && !s.stop.load(); ++i) {
    uint64_t off = s.Base(w) + (rng() % pages) * 4096;
    ssize_t n = Timed(wk, [&] { return pread(fd, buf.data, 4096, static_cast<off_t>(off)); });
    if (n != 4096) {
      close(fd);
      return Status::IoError(wk.path + ": read: " + (n < 0 ? Errno() : "short read"));
    }
    wk.bytes += n;
    ++wk.ops;
  }
  close(fd);
  return Status::Ok();
}

std::string FsyncName(int w) { return "fsync-" + std::to_string(w) + ".dat"; }

Status FsyncPhase(Shared& s, int w, Worker& wk) {
  wk.path = s.o.dir + "/" + FsyncName(w);
  int fd = OpenIn(s.dir_fd, FsyncName(w), O_WRONLY | (s.o.direct ? O_DIRECT : 0));  // prepared
  if (fd < 0) return Status::IoError(wk.path + ": open: " + OpenError(s));
  AlignedBuffer buf(4096);
  std::memcpy(buf.data, s.pattern.data(), 4096);
  for (int i = 0; i < s.o.fsync_ops && !s.stop.load(); ++i) {
    int rc = Timed(wk, [&] {
      if (pwrite(fd, buf.data, 4096, static_cast<off_t>(i) * 4096) != 4096) return -1;
      return fsync(fd);
    });
    if (rc != 0) {
      close(fd);
      return Status::IoError(wk.path + ": write+fsync: " + Errno());
    }
    wk.bytes += 4096;
    ++wk.ops;
  }
  close(fd);
  return Status::Ok();
}

Status MetaPhase(Shared& s, int w, Worker& wk, const std::string& op) {
  std::string name = "meta-" + std::to_string(w);
  std::string dir = s.o.dir + "/" + name;
  if (s.dir_fd < 0) return Status::IoError(dir + ": " + OpenError(s));
  if (op == "meta-create") {
    if (mkdirat(s.dir_fd, name.c_str(), 0700) != 0) {
      return Status::IoError(dir + ": mkdir: " + OpenError(s));
    }
    s.Created(dir);
  }
  int meta_fd = openat(s.dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (meta_fd < 0) return Status::IoError(dir + ": open: " + OpenError(s));
  Status st;
  for (int i = 0; i < s.o.files && !s.stop.load(); ++i) {
    std::string file = "f";  // not "f" + to_string(i): GCC 12 warns -Wrestrict there (wrongly)
    file += std::to_string(i);
    std::string f = dir + "/" + file;
    wk.path = f;
    int rc = Timed(wk, [&] {
      if (op == "meta-create") {
        int fd = OpenIn(meta_fd, file, O_WRONLY | O_CREAT);
        if (fd < 0) return -1;
        return close(fd);
      }
      if (op == "meta-stat") {
        struct stat sb;
        return fstatat(meta_fd, file.c_str(), &sb, AT_SYMLINK_NOFOLLOW);
      }
      return unlinkat(meta_fd, file.c_str(), 0);
    });
    if (rc != 0) {
      st = Status::IoError(f + ": " + op.substr(5) + ": " + OpenError(s));
      break;
    }
    if (op == "meta-create") s.Created(f);
    ++wk.ops;
  }
  close(meta_fd);
  return st;
}

// Untimed set-up, as fio lays out its files before timing: space allocated for the files
// written (no size change on every write), the page cache dropped before reading.
Status Prepare(Shared& s, const std::string& phase, int w, Worker& wk) {
  if (phase == "prepare-read") {
    DropCache(s, w, wk);
    return Status::Ok();
  }
  bool fsync_file = phase == "prepare-fsync";
  std::string name = fsync_file ? FsyncName(w) : s.DataName(w);
  wk.path = s.o.dir + "/" + name;
  uint64_t base = fsync_file ? 0 : s.Base(w);
  uint64_t len = fsync_file ? static_cast<uint64_t>(s.o.fsync_ops) * 4096 : s.o.size;
  int fd = Timed(wk, [&] {
    return OpenIn(s.dir_fd, name, O_WRONLY | O_CREAT, !fsync_file && s.o.shared_file);
  });
  if (fd < 0) return Status::IoError(wk.path + ": create: " + OpenError(s));
  s.Created(wk.path);
  Timed(wk, [&] { return fallocate(fd, 0, static_cast<off_t>(base), static_cast<off_t>(len)); });
  close(fd);  // a filesystem without fallocate is measured without it
  return Status::Ok();
}

Status RunWorker(Shared& s, const std::string& phase, int w, Worker& wk) {
  if (phase.starts_with("prepare-")) return Prepare(s, phase, w, wk);
  if (phase == "write") return WritePhase(s, w, wk);
  if (phase == "read") return ReadPhase(s, w, wk);
  if (phase == "randread") return RandReadPhase(s, w, wk);
  if (phase == "fsync") return FsyncPhase(s, w, wk);
  return MetaPhase(s, w, wk, phase);
}

}  // namespace

StorageProbe::StorageProbe(ProbeOptions options) : s_(std::make_shared<Shared>()) {
  s_->o = std::move(options);
  // The caller made the folder just before (mkdtemp): opening it does not wait on the filesystem
  // more than making it did.
  s_->dir_fd = open(s_->o.dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (s_->dir_fd < 0) s_->dir_errno = errno;
  s_->pattern.resize(std::max<uint64_t>(s_->o.block, 4096));
  FillPattern(s_->pattern.data(), s_->pattern.size());
}

std::atomic<bool>* StorageProbe::stop_flag() { return &s_->stop; }

std::vector<std::string> StorageProbe::Created() const {
  std::lock_guard<std::mutex> l(s_->mu);
  return s_->created;
}

Result<PhaseResult> StorageProbe::Run(const std::string& phase) {
  std::string note;
  // Both reads start from a dropped page cache (random 4 KiB reads from memory measured the
  // cache: 1.4-1.9 M IOPS at 0.6 us on ext4) and say how much of the data stayed cached.
  bool reads = phase == "read" || phase == "randread";
  if (phase == "write" || phase == "fsync" || (reads && !s_->o.direct)) {
    auto prep = Pass(reads ? "prepare-read" : "prepare-" + phase);
    if (!prep.ok()) return prep.status();
    note = prep->note;
  }
  auto r = Pass(phase);
  if (r.ok() && reads) {
    r->note = s_->o.direct ? "O_DIRECT: page cache bypassed" : note;
  }
  return r;
}

Result<PhaseResult> StorageProbe::Pass(const std::string& phase) {
  std::shared_ptr<Shared> s = s_;
  s->workers.clear();
  for (int w = 0; w < s->o.jobs; ++w) {
    auto wk = std::make_unique<Worker>();
    wk->path = s->DataFile(w);
    s->workers.push_back(std::move(wk));
  }
  s->running = s->o.jobs;
  auto start = SteadyClock::now();
  for (int w = 0; w < s->o.jobs; ++w) {
    // Detached: a thread stuck in the kernel on a hung filesystem must not block the report.
    std::thread([s, phase, w] {
      Worker& wk = *s->workers[w];
      Status st = RunWorker(*s, phase, w, wk);
      std::lock_guard<std::mutex> l(s->mu);
      wk.error = st;
      --s->running;
      s->cv.notify_all();
    }).detach();
  }
  std::unique_lock<std::mutex> lock(s->mu);
  while (s->running > 0) {
    s->cv.wait_for(lock, std::chrono::milliseconds(20));
    if (s->running == 0) break;
    int64_t now = NowNs();
    for (const auto& wk : s->workers) {
      int64_t began = wk->op_start_ns.load();
      double waited = began ? (now - began) / 1e9 : 0;
      if (began && now - began > std::chrono::nanoseconds(s->o.op_timeout).count()) {
        timeout_ = ProbeTimeout{phase, wk->path, waited};
      }
    }
    if (!timeout_ && SteadyClock::now() - start > s->o.phase_timeout) {
      timeout_ = ProbeTimeout{phase, s->o.dir,
                              std::chrono::duration<double>(SteadyClock::now() - start).count()};
    }
    if (timeout_) {
      s->stop = true;  // workers that are not stuck stop at their next operation
      return Status::Timeout("phase " + phase + ": " + timeout_->path);
    }
    if (s->o.interrupted && s->o.interrupted->load() && !s->stop.load()) {
      // Ctrl-C: the workers stop after their current operation, and are waited for (the
      // watchdog above still bounds that), so that cleanup sees every file they created.
      s->stop = true;
    }
  }
  if (s->stop.load()) return Status(StatusCode::kUnavailable, "interrupted");
  // The phase's time runs from its first operation to its last (the final fsync included), as
  // fio's runtime does: starting the threads, opening the files and making the buffers are not
  // I/O. A pass with a worker that timed nothing falls back to the whole pass.
  double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  int64_t first = 0, last = 0;
  bool all_timed = true;
  for (const auto& wk : s->workers) {
    if (wk->first_ns == 0) {
      all_timed = false;
      break;
    }
    first = first == 0 ? wk->first_ns : std::min(first, wk->first_ns);
    last = std::max(last, wk->last_ns);
  }
  if (all_timed && last > first) seconds = (last - first) / 1e9;
  PhaseResult r;
  r.name = phase;
  r.seconds = seconds;
  std::vector<int64_t> all;
  double resident = 0;
  int known = 0;
  for (auto& wk : s->workers) {
    if (!wk->error.ok()) return wk->error;
    r.bytes += wk->bytes;
    r.ops += wk->ops;
    if (wk->wrong >= 0) r.wrong = std::max<int64_t>(r.wrong, 0) + wk->wrong;
    if (wk->resident >= 0) {
      resident += wk->resident;
      ++known;
    }
    all.insert(all.end(), wk->lat_ns.begin(), wk->lat_ns.end());
  }
  r.latency = ComputePercentiles(all);
  if (phase == "prepare-read") {
    r.note = known ? std::to_string(static_cast<int>(resident / known * 100 + 0.5)) +
                         "% of the data was still cached after POSIX_FADV_DONTNEED"
                   : "page cache residency unknown (mincore failed)";
  }
  return r;
}

bool RemoveCreated(const std::vector<std::string>& paths, int deadline_ms) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([paths, done] {
    // Deepest first: files, then their folders.
    std::vector<std::string> order = paths;
    std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
      return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    for (const auto& p : order) {
      if (unlink(p.c_str()) != 0) rmdir(p.c_str());
    }
    done->store(true);
  }).detach();
  auto until = SteadyClock::now() + std::chrono::milliseconds(deadline_ms);
  while (!done->load() && SteadyClock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done->load();
}

}  // namespace tocsin::bench

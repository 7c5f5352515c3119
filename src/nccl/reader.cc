#include "nccl/reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "nccl/log_line.h"
#include "sys/line_reader.h"

namespace tocsin::nccl {
namespace {

// Chunk sizes, a guided schedule: each chunk is what is left over twice the threads, within these
// bounds. Big chunks first (fewer analyzers to create and merge), smaller ones toward the end,
// so that a thread that finishes early (a faster or less loaded core) takes the next one and the
// threads end together.
constexpr uint64_t kMaxChunkBytes = 128ull << 20;
constexpr uint64_t kMinChunkBytes = 4ull << 20;
// The longest line LineReader hands out whole (its default).
constexpr uint64_t kMaxLine = 64 << 10;

Status ReadError(uint64_t at) {
  return Status::IoError("read at byte " + std::to_string(at) + ": " + std::strerror(errno));
}

// Feeds the lines `reader` holds to `analyzer`: those with "NCCL " or '#', or every line inside an
// nccl-tests table; events to on_event when set.
Status FeedLines(LineReader& reader, Analyzer& analyzer, const EventFn& on_event) {
  std::vector<nlohmann::json> events;
  std::string_view line;
  bool truncated = false;
  while (true) {
    auto more = analyzer.WantsEveryLine() ? reader.Next(&line, &truncated)
                                          : reader.NextContaining("NCCL ", '#', &line, &truncated);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
    if (truncated) analyzer.NoteLongLine();
    analyzer.FeedLine(line, on_event ? &events : nullptr, reader.word_at(), reader.same_prefix());
    for (const auto& e : events) on_event(e);
    events.clear();
  }
}

// One input in order (stdin, pipes, --follow, small files).
Status ReadSequential(int fd, const std::string& name, const EventFn& on_event,
                      Analyzer& analyzer) {
  analyzer.BeginInput(name);
  LineReader reader(fd);
  TOCSIN_RETURN_IF_ERROR(FeedLines(reader, analyzer, on_event));
  analyzer.EndInput(reader.bytes_read());
  return Status::Ok();
}

// Where the first newline in [at, end) is (end when none is), or a read error.
Result<uint64_t> FindNewline(int fd, uint64_t at, uint64_t end) {
  char buf[1 << 16];
  while (at < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof(buf), end - at));
    ssize_t n = ::pread(fd, buf, want, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReadError(at);
    if (n == 0) return end;
    const char* nl = static_cast<const char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
    if (nl != nullptr) return at + static_cast<uint64_t>(nl - buf);
    at += static_cast<uint64_t>(n);
  }
  return end;
}

// One chunk, [from, to), into an analyzer of its own; `buffer` is the thread's, kept from chunk
// to chunk. Not inlined into the worker: inside the worker's try block the line loop compiled
// 5 % slower (CPU time on the heavy log, alternating runs).
[[gnu::noinline]] std::unique_ptr<Analyzer> ReadChunk(int fd, uint64_t from, uint64_t to,
                                                      const std::string& name,
                                                      const Options& options,
                                                      std::vector<char>& buffer, Status& status) {
  auto a = std::make_unique<Analyzer>(options);
  a->BeginInput(name);
  a->DisablePerf();
  LineReader reader = LineReader::Range(fd, from, to - from, std::move(buffer));
  status = reader.ForEachContaining("NCCL ", '#', [&](std::string_view line, bool cut) {
    if (cut) a->NoteLongLine();
    a->FeedLine(line, nullptr, reader.word_at(), reader.same_prefix());
  });
  a->EndInput(reader.bytes_read());
  buffer = std::move(reader).TakeBuffer();
  return a;
}

// A large regular file: chunks cut at line starts, taken in order by `threads` threads from a
// shared counter, their NCCL lines analysed, and the chunks' analyzers merged in order as they
// complete (at most a few are alive at once); nccl-tests output (tables span chunks) then parsed by
// one pass that stops only at lines holding '#' (or at every line inside a table). Same result as
// ReadSequential.
Status ReadParallel(int fd, uint64_t size, int threads, const std::string& name,
                    const Options& options, Analyzer& analyzer) {
  std::vector<uint64_t> bounds = {0};
  const uint64_t min_chunk = std::min(kMinChunkBytes, std::max<uint64_t>(1 << 20, size / 8));
  while (size - bounds.back() > min_chunk) {
    uint64_t left = size - bounds.back();
    uint64_t chunk = std::clamp<uint64_t>(left / (2 * static_cast<uint64_t>(threads)), min_chunk,
                                          kMaxChunkBytes);
    if (left - chunk < min_chunk) break;  // the rest is the last chunk
    TOCSIN_ASSIGN_OR_RETURN(uint64_t nl, FindNewline(fd, bounds.back() + chunk, size));
    if (nl + 1 >= size) break;  // no newline before the end: the rest is the last chunk
    bounds.push_back(nl + 1);
  }
  bounds.push_back(size);
  size_t n_chunks = bounds.size() - 1;
  // A chunk's result, handed from its worker to the merging thread.
  struct Done {
    std::unique_ptr<Analyzer> analyzer;
    Status status;
    bool ready = false;
  };
  std::vector<Done> done(n_chunks);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;    // the next chunk to take
  size_t merged = 0;  // chunks merged so far
  bool failed = false;
  const size_t ahead = static_cast<size_t>(threads) * 2;  // bounds the unmerged analyzers
  // The chunks' analyzers alive at once (`ahead` unmerged, one per thread) hold three times the
  // whole's byte budget at most, however many threads.
  Options chunk_options = options;
  chunk_options.max_bytes =
      std::max<size_t>(1 << 20, options.max_bytes / static_cast<size_t>(threads));
  std::exception_ptr thrown;  // the first exception of a worker (memory, mostly), guarded by mu
  std::vector<std::thread> workers;
  workers.reserve(std::min<size_t>(static_cast<size_t>(threads), n_chunks));  // never grows
  // On every way out, the workers are told to stop and joined (an exception here, thrown on
  // from below, must not leave a joinable thread behind: that would abort the process).
  struct JoinAll {
    std::vector<std::thread>& workers;
    std::mutex& mu;
    std::condition_variable& cv;
    bool& failed;
    ~JoinAll() {
      {
        std::lock_guard<std::mutex> lock(mu);
        for (const auto& w : workers) failed = failed || w.joinable();
      }
      cv.notify_all();
      for (auto& w : workers) {
        if (w.joinable()) w.join();
      }
    }
  } join_all{workers, mu, cv, failed};
  for (size_t t = 0; t < std::min<size_t>(static_cast<size_t>(threads), n_chunks); ++t) {
    auto work = [&] {
      std::vector<char> buffer;  // one per thread, reused chunk after chunk
      while (true) {
        size_t c;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return failed || next >= n_chunks || next < merged + ahead; });
          if (failed || next >= n_chunks) return;
          c = next++;
        }
        std::unique_ptr<Analyzer> a;
        Status st;
        std::exception_ptr error;
        try {
          a = ReadChunk(fd, bounds[c], bounds[c + 1], name, chunk_options, buffer, st);
        } catch (...) {  // out of memory, mostly: the merging thread throws it on
          a.reset();
          error = std::current_exception();  // bad_alloc's copy needs no memory
        }
        // Nothing below allocates: the status is moved, not copied.
        std::lock_guard<std::mutex> lock(mu);
        failed = failed || !st.ok() || error != nullptr;
        if (error && !thrown) thrown = error;
        done[c] = {std::move(a), std::move(st), true};
        cv.notify_all();
      }
    };
    try {
      workers.emplace_back(work);
    } catch (const std::exception&) {  // system_error, or bad_alloc for the thread's state
      break;  // no more threads (a limit on processes or memory): the ones started do it all
    }
  }
  if (workers.empty()) return ReadSequential(fd, name, EventFn{}, analyzer);
  bool other_lines = false;
  analyzer.BeginInput(name);
  for (size_t c = 0; c < n_chunks; ++c) {
    std::unique_ptr<Analyzer> a;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done[c].ready || failed; });
      if (failed) break;  // a chunk could not be read: its error is returned below
      a = std::move(done[c].analyzer);
    }
    other_lines = other_lines || a->SawOtherLines();
    analyzer.MergeFrom(std::move(*a));
    a.reset();
    std::lock_guard<std::mutex> lock(mu);
    merged = c + 1;
    cv.notify_all();
  }
  for (auto& w : workers) w.join();
  if (thrown) std::rethrow_exception(thrown);
  for (const auto& d : done) {
    if (d.ready && !d.status.ok()) return d.status;
  }
  if (!other_lines) return Status::Ok();
  LineReader pass = LineReader::Range(fd, 0, size);
  std::string_view line;
  bool truncated = false;
  while (true) {
    auto more = analyzer.PerfInTable() ? pass.Next(&line, &truncated)
                                       : pass.NextContaining("", '#', &line, &truncated);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!ParseLogLine(line)) analyzer.FeedPerf(line);
  }
  return Status::Ok();
}

// Where the last line in [from, end) ends (one past its newline), looking back at most
// kMaxLine + 1 bytes; 0 when no newline is there.
Result<uint64_t> LastLineEnd(int fd, uint64_t from, uint64_t end) {
  uint64_t stop = end - std::min(end - from, kMaxLine + 1);
  char buf[1 << 14];
  while (end > stop) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof(buf), end - stop));
    uint64_t at = end - want;
    ssize_t n = ::pread(fd, buf, want, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReadError(at);
    if (static_cast<size_t>(n) < want)
      return Status::IoError("read at byte " + std::to_string(at) + ": short read");
    const void* nl = ::memrchr(buf, '\n', want);
    if (nl != nullptr) return at + static_cast<uint64_t>(static_cast<const char*>(nl) - buf) + 1;
    end = at;
  }
  return 0;
}

}  // namespace

Status ReadLog(int fd, const std::string& name, const ReadOptions& options, Analyzer& analyzer) {
  struct stat st {};
  bool parallel = options.threads > 1 && !options.on_event && ::fstat(fd, &st) == 0 &&
                  S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) >= kParallelMinBytes;
  if (parallel) {
    return ReadParallel(fd, static_cast<uint64_t>(st.st_size), options.threads, name,
                        options.analyzer, analyzer);
  }
  return ReadSequential(fd, name, options.on_event, analyzer);
}

Status ReadAppended(int fd, uint64_t size, uint64_t budget, LogCursor& cursor, Analyzer& analyzer) {
  uint64_t end = std::min(size, cursor.offset + std::max(budget, kMaxLine + 1));
  if (cursor.offset >= end) return Status::Ok();
  if (cursor.in_long_line) {
    TOCSIN_ASSIGN_OR_RETURN(uint64_t nl, FindNewline(fd, cursor.offset, end));
    cursor.offset = nl < end ? nl + 1 : end;
    if (nl == end) return Status::Ok();  // the long line goes on
    cursor.in_long_line = false;
    if (cursor.offset == end) return Status::Ok();
  }
  TOCSIN_ASSIGN_OR_RETURN(uint64_t last, LastLineEnd(fd, cursor.offset, end));
  bool cut = false;
  if (last == 0) {
    if (end - cursor.offset <= kMaxLine) return Status::Ok();  // wait for the rest of the line
    last = end;  // a line longer than any line may be: cut here, its rest skipped
    cut = true;
  }
  LineReader reader = LineReader::Range(fd, cursor.offset, last - cursor.offset);
  TOCSIN_RETURN_IF_ERROR(FeedLines(reader, analyzer, nullptr));
  cursor.offset = last;
  cursor.in_long_line = cut;
  return Status::Ok();
}

}  // namespace tocsin::nccl

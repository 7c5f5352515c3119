#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace tocsin::bench {

// Aligned memory for O_DIRECT. Large blocks go in transparent huge pages where the kernel allows
// it (THP "always" or "madvise"): a request takes one segment per physically contiguous run of its
// buffer, and a 1 MiB buffer of scattered 4 KiB pages needs 256, more than many devices take in
// one request (254 for a virtio disk, often 128 for NVMe), so the kernel splits each block into
// two or three requests, or not, as the page allocator happened to place the pages. A huge page
// is one run: one request per block, every time.
struct AlignedBuffer {
  static constexpr size_t kHugePage = 2u << 20;
  static constexpr size_t kHugeFrom = 256u << 10;
  explicit AlignedBuffer(size_t n) : size(n) {
    bool huge = n >= kHugeFrom;
    size_t bytes = huge ? (n + kHugePage - 1) / kHugePage * kHugePage : std::max<size_t>(n, 4096);
    if (posix_memalign(&data, huge ? kHugePage : 4096, bytes) != 0) {
      data = nullptr;
      return;
    }
    if (huge) madvise(data, bytes, MADV_HUGEPAGE);  // before the first touch; best effort
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { free(data); }
  void* data = nullptr;
  size_t size;
};

}  // namespace tocsin::bench

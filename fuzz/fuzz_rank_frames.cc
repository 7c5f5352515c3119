// What another rank (or a stranger) sends the bench coordinator and rank 0: the byte stream cut
// into frames (at the pre-authentication cap, fed in pieces of the input's choosing), and every
// decoder of a frame or a gathered payload. Nothing may crash, throw or buffer beyond the cap.
// The first byte picks the decoder (one per run keeps each run short); the rest is the input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "bench/payloads.h"
#include "ranks/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tocsin;
  if (size == 0) return 0;
  unsigned char pick = data[0];
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string secret;
  switch (pick % 8) {
    case 0: {  // a byte stream in pieces of 1..32 bytes
      size_t piece = 1 + (pick >> 3);
      ranks::FrameReader reader(ranks::kMaxHelloBytes);
      while (!in.empty()) {
        size_t n = std::min({piece, in.size(), reader.Wanted()});
        if (!reader.Add(in.substr(0, n)).ok()) break;
        in.remove_prefix(n);
        if (reader.Complete()) (void)ranks::DecodeHello(reader.Take());
        if (reader.buffered() > ranks::kMaxHelloBytes) __builtin_trap();
      }
      break;
    }
    case 1:
      (void)ranks::DecodeHello(in);
      break;
    case 2:
      (void)ranks::DecodeMessage(in, 4);
      break;
    case 3:
      (void)ranks::DecodeRoster(in, 2, secret);
      break;
    case 4:
      (void)ranks::DecodeGathered(in, 3);
      break;
    case 5:
      (void)bench::DecodeSizeResults(in, {{1024, 256, 0, 0}, {4096, 1024, 0, 0}});
      break;
    case 6:
      (void)bench::DecodeP2p(in, 1, 3, {1024, 4096});
      break;
    case 7:
      (void)bench::DecodePhases(in, {"write", "read"});
      break;
  }
  return 0;
}

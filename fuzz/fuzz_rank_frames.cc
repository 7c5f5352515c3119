// What another rank (or a stranger) sends the bench coordinator and rank 0: the byte stream cut
// into frames (at the pre-authentication cap, fed in pieces of the input's choosing), and every
// decoder of a frame or a gathered payload. Nothing may crash, throw or allocate beyond the cap.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "bench/payloads.h"
#include "ranks/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tocsin;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The stream: the first byte picks the piece size, the rest is what arrives.
  if (!in.empty()) {
    size_t piece = 1 + static_cast<unsigned char>(in[0]) % 64;
    ranks::FrameReader reader(ranks::kMaxHelloBytes);
    std::string_view rest = in.substr(1);
    while (!rest.empty()) {
      size_t n = std::min({piece, rest.size(), reader.Wanted()});
      if (!reader.Add(rest.substr(0, n)).ok()) break;
      rest.remove_prefix(n);
      if (reader.Complete()) (void)ranks::DecodeHello(reader.Take());
      if (reader.buffered() > ranks::kMaxHelloBytes) __builtin_trap();
    }
  }
  (void)ranks::DecodeHello(in);
  (void)ranks::DecodeMessage(in, 4);
  std::string secret;
  (void)ranks::DecodeRoster(in, 2, secret);
  (void)ranks::DecodeGathered(in, 3);
  std::vector<bench::SizeResult> sweep = {{1024, 256, 0, 0}, {4096, 1024, 0, 0}};
  (void)bench::DecodeSizeResults(in, sweep);
  (void)bench::DecodeP2p(in, 1, 3, {1024, 4096});
  (void)bench::DecodePhases(in, {"write", "read"});
  return 0;
}

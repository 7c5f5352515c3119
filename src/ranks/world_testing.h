#pragma once

// Helpers for tests of ranks: a job whose rank 0 serves on an ephemeral loopback port, and raw
// connections to it that behave as strangers (or as a misbehaving rank) would.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ranks/world.h"

namespace tocsin::ranks::testing {

inline WorldOptions Options(int rank, int size, const std::string& coordinator,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  WorldOptions o;
  o.rank = rank;
  o.world_size = size;
  o.coordinator = coordinator;
  o.token = "t";
  o.params = "allreduce 1K..1M";
  o.timeout = timeout;
  return o;
}

inline std::unique_ptr<World> MustConnect(const WorldOptions& o) {
  auto w = World::Connect(o);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(*w) : nullptr;
}

// Rank 0 on an ephemeral port; the others are told where it is.
struct Job {
  explicit Job(int size, std::chrono::milliseconds timeout = std::chrono::seconds(10),
               std::chrono::milliseconds hello_timeout = std::chrono::seconds(3)) {
    WorldOptions o = Options(0, size, "127.0.0.1:0", timeout);
    o.hello_timeout = hello_timeout;
    auto w0 = World::Connect(o);
    EXPECT_TRUE(w0.ok()) << w0.status().ToString();
    coordinator = (*w0)->options().coordinator;
    worlds.push_back(std::move(*w0));
  }
  std::string coordinator;
  std::vector<std::unique_ptr<World>> worlds;
};

// A plain connection to `coordinator` (HOST:PORT), non-blocking.
inline Fd Dial(const std::string& coordinator) {
  auto hp = SplitHostPort(coordinator);
  EXPECT_TRUE(hp.ok());
  auto fd = ConnectRetry(hp->first, hp->second, DeadlineIn(std::chrono::seconds(5)));
  EXPECT_TRUE(fd.ok()) << fd.status().ToString();
  if (!fd.ok()) return Fd();
  TuneStream(fd->get());
  return std::move(*fd);
}

}  // namespace tocsin::ranks::testing

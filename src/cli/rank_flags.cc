#include "cli/rank_flags.h"

#include <filesystem>
#include <iostream>
#include <random>

#include "base/strings.h"
#include "sys/env.h"

namespace tocsin::cli {

constexpr int kMaxLocalRanks = 256;
namespace {

std::vector<std::string>& ProcessArgs() {
  static std::vector<std::string> args;
  return args;
}

}  // namespace

void SetProcessArgs(int argc, char** argv) { ProcessArgs().assign(argv, argv + argc); }

void RankFlags::AddTo(CLI::App* cmd) {
  cmd->add_option("--local", local, "Start N ranks on this machine (rank 0 reports)");
  cmd->add_option("--rank", rank, "This rank (default: $RANK, $JOB_COMPLETION_INDEX)");
  cmd->add_option("--world-size", world_size, "Number of ranks (default: $WORLD_SIZE)");
  cmd->add_option("--coordinator", coordinator,
                  "HOST:PORT of rank 0 (default: $MASTER_ADDR:$MASTER_PORT)");
  cmd->add_option("--token-file", token_file,
                  "File holding the secret every rank must present (default: "
                  "$TOCSIN_BENCH_TOKEN; required with more than one rank)");
  cmd->add_option("--token", token,
                  "The secret itself (visible in ps: prefer --token-file or $TOCSIN_BENCH_TOKEN)");
  cmd->add_flag("--insecure-no-token", insecure_no_token,
                "Run ranks without a token: anyone who reaches the coordinator can join");
}

namespace {

// The token from --token-file: the file's text without surrounding whitespace.
Result<std::string> ReadTokenFile(const std::string& path) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  auto text = NewRootedEnv()->ReadFile(ec ? path : abs, 4096);
  if (!text.ok()) return text.status().WithPrefix("--token-file");
  std::string token(Trim(*text));
  if (token.empty()) return Status::InvalidArgument("--token-file " + path + " is empty");
  return token;
}

}  // namespace

Status RankFlags::Apply(ranks::WorldOptions& world,
                        std::function<void(const std::string&)>* on_coordinator,
                        std::vector<pid_t>* children) const {
  world.rank = rank;
  world.world_size = world_size;
  world.coordinator = coordinator;
  world.token = token;
  world.insecure_no_token = insecure_no_token;
  if (!token.empty() && !token_file.empty()) {
    return Status::InvalidArgument("--token and --token-file: give one");
  }
  if (!token.empty()) {
    std::cerr << "tocsin: warning: --token shows the secret to every user of this machine (ps, "
                 "/proc); use --token-file or TOCSIN_BENCH_TOKEN\n";
  }
  if (!token_file.empty()) {
    auto t = ReadTokenFile(token_file);
    if (!t.ok()) return t.status();
    world.token = *t;
  }
  if (local <= 0) return ranks::ApplyEnvironment(world, ranks::RankEnvironment());
  if (rank >= 0 || world_size >= 0 || !coordinator.empty()) {
    return Status::InvalidArgument(
        "--local starts every rank itself: drop --rank/--world-size/--coordinator");
  }
  if (local > kMaxLocalRanks) {
    return Status::InvalidArgument("--local " + std::to_string(local) + ": at most " +
                                   std::to_string(kMaxLocalRanks) +
                                   " ranks on one machine (each is a process with its sockets)");
  }
  world.rank = 0;
  world.world_size = local;
  world.coordinator = "127.0.0.1:0";
  if (world.token.empty()) {
    std::random_device rd;
    world.token = std::to_string(rd()) + std::to_string(rd());
  }
  *on_coordinator = [children, n = local, t = world.token](const std::string& c) {
    const auto& args = ProcessArgs();
    std::vector<std::string> own(args.begin() + (args.empty() ? 0 : 1), args.end());
    auto started = ranks::StartLocalRanks("/proc/self/exe", own, n, c, t);
    if (!started.ok()) {
      std::cerr << "tocsin: " << started.status().message() << "\n";  // they will not join
      return;
    }
    *children = std::move(*started);
  };
  return Status::Ok();
}

}  // namespace tocsin::cli

#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

namespace tocsin::sys {

// Runs fn() on a thread of its own and waits at most `timeout` for its result: a call that can
// block in the kernel (a hung filesystem, a wedged driver's sysfs file or ioctl) cannot hold the
// caller. A call that does not return in time is abandoned: its thread runs on, detached, until
// the call returns or the process exits, and its result is dropped. So fn must own what it
// touches (capture by value or shared_ptr, never a reference to the caller's stack).
// nullopt: no result within `timeout`, or no thread could be started. An exception fn throws in
// time is rethrown here.
// The one "bounded call on an abandoned thread" in tocsin.
template <typename F>
std::optional<std::invoke_result_t<F&>> BoundedCall(std::chrono::milliseconds timeout, F fn) {
  using T = std::invoke_result_t<F&>;
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> result = promise->get_future();
  try {
    std::thread([promise, fn = std::move(fn)]() mutable {
      try {
        promise->set_value(fn());
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    }).detach();
  } catch (const std::system_error&) {  // no thread left (a process limit)
    return std::nullopt;
  }
  if (result.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace tocsin::sys

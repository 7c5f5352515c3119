#include "agent/scheduler.h"

#include <system_error>

namespace tocsin::agent {

using SteadyClock = std::chrono::steady_clock;

// One run of a task on its worker thread; the worker fills it and signals the core.
struct Slot {
  bool done = false;
  Result<TaskOutput> result = Status::Internal("not run");
};

struct Scheduler::Core {
  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool stopping = false;
  uint64_t wake_generation = 0;
  std::vector<TaskState> states;
  std::vector<std::shared_ptr<Slot>> running;  // per task: the abandoned worker's slot, if any
  std::function<TimePoint()> now;
};

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kNever:
      return "never";
    case Outcome::kOk:
      return "ok";
    case Outcome::kError:
      return "error";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kStuck:
      return "stuck";
  }
  return "unknown";
}

Scheduler::Scheduler(std::vector<TaskSpec> tasks, std::function<TimePoint()> now)
    : core_(std::make_shared<Core>()), specs_(std::move(tasks)) {
  core_->now = std::move(now);
  for (const auto& spec : specs_) {
    TaskState st;
    st.name = spec.name;
    st.checks = spec.checks;
    st.interval = spec.interval;
    st.timeout = spec.timeout;
    core_->states.push_back(std::move(st));
    core_->running.push_back(nullptr);
    runs_.push_back(std::make_shared<std::function<Result<TaskOutput>()>>(spec.run));
  }
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  for (size_t i = 0; i < specs_.size(); ++i) loops_.emplace_back([this, i] { Loop(i); });
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    core_->stopping = true;
  }
  core_->cv.notify_all();
  for (auto& t : loops_) {
    if (t.joinable()) t.join();
  }
  loops_.clear();
}

void Scheduler::RunAllNow() {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    ++core_->wake_generation;
  }
  core_->cv.notify_all();
}

std::vector<TaskState> Scheduler::States() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->states;
}

bool Scheduler::WaitForRuns(uint64_t runs, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(core_->mu);
  return core_->cv.wait_for(lock, timeout, [&] {
    if (core_->stopping) return true;
    for (const auto& s : core_->states) {
      if (s.runs < runs) return false;
    }
    return true;
  });
}

void Scheduler::Loop(size_t index) {
  const TaskSpec& spec = specs_[index];
  std::shared_ptr<Core> core = core_;
  std::unique_lock<std::mutex> lock(core->mu);
  while (!core->stopping) {
    TaskState& st = core->states[index];
    TimePoint started = core->now();
    auto steady_start = SteadyClock::now();
    std::shared_ptr<Slot>& previous = core->running[index];
    if (previous && !previous->done) {
      st.outcome = Outcome::kStuck;
      st.error = "the previous run has not returned (stuck for more than " +
                 std::to_string(spec.timeout.count()) + " ms)";
      st.output = nullptr;
      ++st.stuck;
    } else {
      previous = nullptr;
      auto slot = std::make_shared<Slot>();
      lock.unlock();
      // The worker shares the task's closure (and its state between runs): it may outlive us.
      auto work = [core, slot, run = runs_[index]] {
        Result<TaskOutput> r = Status::Internal("task threw");
        try {
          r = (*run)();
        } catch (const std::exception& e) {
          r = Status::Internal(std::string("task threw: ") + e.what());
        }
        std::lock_guard<std::mutex> guard(core->mu);
        slot->result = std::move(r);
        slot->done = true;
        core->cv.notify_all();
      };
      try {
        std::thread(std::move(work)).detach();
      } catch (const std::system_error& e) {  // no thread left (a process limit): a failed run
        std::lock_guard<std::mutex> guard(core->mu);
        slot->result = Status::Internal(std::string("cannot start a thread: ") + e.what());
        slot->done = true;
      }
      lock.lock();
      bool finished = core->cv.wait_until(lock, steady_start + spec.timeout,
                                          [&] { return slot->done || core->stopping; });
      if (core->stopping && !slot->done) break;
      TaskState& s = core->states[index];  // (the vector never changes size)
      s.duration_s = std::chrono::duration<double>(SteadyClock::now() - steady_start).count();
      if (!finished) {
        s.outcome = Outcome::kTimeout;
        s.error = "no answer within " + std::to_string(spec.timeout.count()) + " ms";
        s.output = nullptr;
        ++s.timeouts;
        core->running[index] = slot;  // abandoned; checked before the next run
      } else if (!slot->result.ok()) {
        // A task that bounds its own input (a probe in a child process) reports a hang as a
        // Timeout status: the same outcome as a worker the scheduler gave up on.
        bool hung = slot->result.status().code() == StatusCode::kTimeout;
        s.outcome = hung ? Outcome::kTimeout : Outcome::kError;
        s.error = slot->result.status().message();
        s.output = nullptr;
        ++(hung ? s.timeouts : s.errors);
      } else {
        s.outcome = Outcome::kOk;
        s.error.clear();
        s.output = std::make_shared<const TaskOutput>(std::move(*slot->result));
        s.last_ok = started;
      }
    }
    TaskState& done = core->states[index];
    done.last_run = started;
    ++done.runs;
    core->cv.notify_all();
    uint64_t generation = core->wake_generation;
    core->cv.wait_until(lock, steady_start + spec.interval,
                        [&] { return core->stopping || core->wake_generation != generation; });
  }
}

}  // namespace tocsin::agent

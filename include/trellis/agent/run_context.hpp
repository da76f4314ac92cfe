#pragma once
/// @file
/// `RunContext`: what a node (and a hook) knows about the run it is part of.

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "trellis/agent/clock.hpp"
#include "trellis/agent/permission.hpp"
#include "trellis/agent/resume.hpp"

namespace trellis::agent {

class RunContext {
 public:
  RunContext(std::string run_id, std::string node, std::uint64_t step, std::uint32_t attempt,
             PermissionMode mode, std::stop_token stop, std::optional<Resume> resume, Clock& clock)
      : run_id_(std::move(run_id)),
        node_(std::move(node)),
        step_(step),
        attempt_(attempt),
        mode_(mode),
        stop_(std::move(stop)),
        resume_(std::move(resume)),
        clock_(&clock) {}

  std::string_view run_id() const noexcept { return run_id_; }
  /// The node being run.
  std::string_view node() const noexcept { return node_; }
  /// Steps committed before this one (0 for the first step of a run).
  std::uint64_t step() const noexcept { return step_; }
  /// Failed tries of this node before this one (transient errors).
  std::uint32_t attempt() const noexcept { return attempt_; }
  /// The permission mode when the node started.
  PermissionMode mode() const noexcept { return mode_; }
  /// Cancellation: a node doing long work should check it and return early.
  std::stop_token stop_token() const noexcept { return stop_; }
  bool stop_requested() const noexcept { return stop_.stop_requested(); }
  /// The decision this node resumes with (after an Interrupt), for this run of it only.
  const std::optional<Resume>& resume() const noexcept { return resume_; }
  bool approved() const noexcept {
    return resume_.has_value() && std::holds_alternative<Approve>(*resume_);
  }
  Clock& clock() const noexcept { return *clock_; }

 private:
  std::string run_id_;
  std::string node_;
  std::uint64_t step_;
  std::uint32_t attempt_;
  PermissionMode mode_;
  std::stop_token stop_;
  std::optional<Resume> resume_;
  Clock* clock_;
};

}  // namespace trellis::agent

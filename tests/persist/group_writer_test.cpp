// SPDX-License-Identifier: MIT
/// @file
/// GroupWriter (persist/detail/group_writer.hpp) on its own, over a stand-in for the graph's
/// lock and a counter state: what is on disk and published when send() returns, the order of
/// concurrent senders, a send from a thread holding the lock, and what a failure refuses.
#include <trellis/machine/send_result.hpp>
#include <trellis/persist/detail/group_writer.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/persist/sidecar.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "persist_test_support.hpp"
#include "writer_test_support.hpp"

using nlohmann::json;
using persist_test::ScratchDir;
using trellis::PersistEvent;
using trellis::SendResult;
using trellis::detail::FunctionRef;
using trellis::detail::GroupWriter;
using writer_test::disk_epoch;
using writer_test::EventLog;
using Kind = PersistEvent::Kind;

namespace {

/// The state: a counter, with its JSON.
struct Count : GroupWriter::State {
  int value = 0;
};

std::shared_ptr<const GroupWriter::State> count(int value) {
  auto c = std::make_shared<Count>();
  c->json = value;
  c->value = value;
  return c;
}

/// Stands in for the graph: its lock, and the transitions published under it (the state cell).
class Graph final : public GroupWriter::Machine {
 public:
  bool holds_graph_lock() const override { return owner_.load() == std::this_thread::get_id(); }
  void with_graph_lock(FunctionRef<void()> f) override {
    Lock lock(*this);
    f();
  }

  /// Holds the lock for a scope.
  class Lock {
   public:
    explicit Lock(Graph& g) : g_(g) {
      g_.mutex_.lock();
      g_.owner_ = std::this_thread::get_id();
    }
    ~Lock() {
      g_.owner_ = std::thread::id();
      g_.mutex_.unlock();
    }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    Graph& g_;
  };

  /// (epoch, value) of every published transition, in publish order (read with no sender left).
  std::vector<std::pair<std::uint64_t, int>> published;

 private:
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
};

/// Adds `delta` to the counter (negative: rejected; 0: unchanged).
class Add final : public GroupWriter::Send {
 public:
  Add(Graph& g, int delta) : graph_(g), delta_(delta) {}

  bool decide(const GroupWriter::State& tentative, SendResult& result) override {
    ++decided;
    if (delta_ < 0) {
      result = SendResult::Rejected;
      return false;
    }
    if (delta_ == 0) {
      result = SendResult::Unchanged;
      return false;
    }
    next_ = static_cast<const Count&>(tentative).value + delta_;
    return true;
  }

  std::shared_ptr<const GroupWriter::State> encode() override {
    auto c = std::make_shared<Count>();
    c->json = unwritable ? json(std::numeric_limits<double>::infinity()) : json(next_);
    c->value = next_;
    return c;
  }

  void publish(std::uint64_t epoch) override {
    graph_.published.emplace_back(epoch, next_);
    published_epoch = epoch;
    if (observer_throws) throw std::runtime_error("an observer failed");
  }

  int decided = 0;
  bool unwritable = false;
  bool observer_throws = false;
  std::uint64_t published_epoch = 0;

 private:
  Graph& graph_;
  int delta_;
  int next_ = 0;
};

SendResult send(GroupWriter& writer, Graph& graph, int delta) {
  Add add(graph, delta);
  return writer.send(add);
}

}  // namespace

TEST_CASE("group writer: send returns once its transition is on disk and published") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(0), 0);
  CHECK(send(writer, graph, 3) == SendResult::Transitioned);
  CHECK(disk_epoch(file) == 1);
  CHECK(trellis::load_sidecar(file, "doc")->state == json(3));
  CHECK(writer.durable_epoch() == 1);
  CHECK(graph.published == std::vector<std::pair<std::uint64_t, int>>{{1, 3}});
  CHECK(log.persisted() == std::vector<std::uint64_t>{1});
}

TEST_CASE("group writer: a rejected or unchanged event writes and publishes nothing") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(5), 7);
  CHECK(send(writer, graph, -1) == SendResult::Rejected);
  CHECK(send(writer, graph, 0) == SendResult::Unchanged);
  CHECK_FALSE(disk_epoch(file).has_value());
  CHECK(graph.published.empty());
  CHECK(log.events().empty());
  CHECK(send(writer, graph, 1) == SendResult::Transitioned);
  CHECK(graph.published == std::vector<std::pair<std::uint64_t, int>>{{8, 6}});
}

TEST_CASE("group writer: concurrent senders are published in epoch order, each on disk first") {
  for (const int threads : {2, 8}) {
    const int per_thread = 30;
    INFO(threads << " threads x " << per_thread << " sends");
    ScratchDir dir;
    const auto file = dir / "doc.json";
    EventLog log;
    Graph graph;
    GroupWriter writer(log.config(file), graph, count(0), 0);
    std::atomic<int> not_durable{0};
    std::atomic<int> not_transitioned{0};
    writer_test::run_bounded(
        [&] {
          std::vector<std::thread> senders;
          for (int t = 0; t < threads; ++t) {
            senders.emplace_back([&] {
              for (int i = 0; i < per_thread; ++i) {
                Add add(graph, 1);
                if (writer.send(add) != SendResult::Transitioned) ++not_transitioned;
                if (disk_epoch(file).value_or(0) < add.published_epoch) ++not_durable;
              }
            });
          }
          for (auto& s : senders) s.join();
        },
        std::chrono::seconds(120), "group senders");
    const int total = threads * per_thread;
    CHECK(not_transitioned.load() == 0);
    CHECK(not_durable.load() == 0);
    REQUIRE(graph.published.size() == static_cast<std::size_t>(total));
    for (std::size_t i = 0; i < graph.published.size(); ++i) {
      INFO("transition " << i);
      CHECK(graph.published[i].first == i + 1);
      CHECK(graph.published[i].second == static_cast<int>(i) + 1);
    }
    CHECK(disk_epoch(file) == static_cast<std::uint64_t>(total));
    const auto persisted = log.persisted();  // fewer writes than transitions, never going back
    CHECK(persisted.back() == static_cast<std::uint64_t>(total));
    for (std::size_t i = 1; i < persisted.size(); ++i) CHECK(persisted[i - 1] < persisted[i]);
  }
}

TEST_CASE("group writer: a send from a thread holding the graph's lock writes by itself") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(0), 0);
  writer_test::run_bounded(
      [&] {
        Graph::Lock held(graph);
        CHECK(send(writer, graph, 2) == SendResult::Transitioned);
        CHECK(disk_epoch(file) == 1);
        CHECK(graph.published == std::vector<std::pair<std::uint64_t, int>>{{1, 2}});
      },
      std::chrono::seconds(60), "a send under the graph's lock");
}

TEST_CASE("group writer: a failed write refuses the send; deciding resumes from the disk") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(0), 0);
  REQUIRE(send(writer, graph, 1) == SendResult::Transitioned);
  {
    trellis::ScopedFailpoint armed("sidecar.after_temp_write", trellis::FailpointAction::error);
    try {
      (void)send(writer, graph, 10);
      FAIL("a failed write was acknowledged");
    } catch (const trellis::persist_error& e) {
      CHECK(dynamic_cast<const trellis::persist_outcome_unknown*>(&e) == nullptr);
      CHECK(std::string(e.what()).find("group write") != std::string::npos);
    }
  }
  CHECK(graph.published.size() == 1);
  CHECK(disk_epoch(file) == 1);
  CHECK(log.kinds() == std::vector<Kind>{Kind::persisted, Kind::persist_failed});
  CHECK_FALSE(writer.unusable());
  CHECK(send(writer, graph, 5) == SendResult::Transitioned);  // 1 + 5: the refused 10 is gone
  CHECK(graph.published.back() == std::pair<std::uint64_t, int>{2, 6});
  CHECK(trellis::load_sidecar(file, "doc")->state == json(6));
}

TEST_CASE("group writer: an unknown outcome is thrown as such and refuses every later send") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(0), 0);
  {
    trellis::ScopedFailpoint armed("sidecar.before_dir_fsync", trellis::FailpointAction::error);
    CHECK_THROWS_AS(send(writer, graph, 1), trellis::persist_outcome_unknown);
  }
  CHECK(graph.published.empty());
  CHECK(disk_epoch(file) == 1);  // renamed into place, never acknowledged
  CHECK(writer.unusable());
  Add later(graph, 1);
  CHECK_THROWS_WITH_AS(writer.send(later), doctest::Contains("reopen the machine"),
                       trellis::persist_error);
  CHECK(later.decided == 0);
  CHECK(disk_epoch(file) == 1);
}

TEST_CASE("group writer: a state JSON cannot carry back is refused before it is queued") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(0), 0);
  Add bad(graph, 1);
  bad.unwritable = true;
  CHECK_THROWS_AS(writer.send(bad), trellis::unwritable_value);
  CHECK_FALSE(disk_epoch(file).has_value());
  CHECK(log.kinds() == std::vector<Kind>{Kind::persist_failed});
  CHECK(send(writer, graph, 1) == SendResult::Transitioned);
  CHECK(graph.published == std::vector<std::pair<std::uint64_t, int>>{{1, 1}});
}

TEST_CASE("group writer: at epoch 2^64-1 a transition is refused, not wrapped") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  GroupWriter writer(log.config(file), graph, count(0), max);
  CHECK_THROWS_AS(send(writer, graph, 1), trellis::persist_error);
  CHECK_FALSE(disk_epoch(file).has_value());
  REQUIRE(log.events().size() == 1);
  CHECK(log.events()[0].epoch == max);
  CHECK(send(writer, graph, -1) == SendResult::Rejected);  // deciding still works
}

TEST_CASE("group writer: an observer's error reaches its sender once the transition is durable") {
  ScratchDir dir;
  const auto file = dir / "doc.json";
  EventLog log;
  Graph graph;
  GroupWriter writer(log.config(file), graph, count(0), 0);
  Add failing(graph, 1);
  failing.observer_throws = true;
  CHECK_THROWS_WITH_AS(writer.send(failing), "an observer failed", std::runtime_error);
  CHECK(disk_epoch(file) == 1);
  CHECK(graph.published.size() == 1);
  CHECK(send(writer, graph, 1) == SendResult::Transitioned);
  CHECK(graph.published.back() == std::pair<std::uint64_t, int>{2, 2});
}

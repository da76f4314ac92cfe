// SPDX-License-Identifier: MIT
/// @file
/// DurableStateChart: a statechart's configuration, history values, data and delayed sends
/// in the sidecar (format version 2), resumed exactly after a restart; delayed sends due
/// during the downtime fire once; sidecars it cannot trust are refused untouched; flat
/// machines' version 1 sidecars still load. Crashes: crash_test.cpp.
#include <trellis/base/failpoint.hpp>
#include <trellis/persist/durable_state_chart.hpp>
#include <trellis/persist/durable_state_machine.hpp>
#include <trellis/persist/errors.hpp>
#include <trellis/persist/failpoint.hpp>
#include <trellis/reactive/context.hpp>
#include <trellis/statechart/builder.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "persist_test_support.hpp"

using persist_test::read_bytes;
using persist_test::ScratchDir;
using persist_test::write_bytes;
using json = nlohmann::json;
using reason = trellis::recovery_error::reason;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Player {
  int entries = 0;  // entries into "a": an entry action run again on reopen would show here
  int ticks = 0;    // delayed "tick" events delivered
  friend bool operator==(const Player&, const Player&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Player, entries, ticks)

/// a (deep history h; a1 -> a2 { a21 -> a22 }) and b, which queues a "tick" 10 s after it is
/// entered; tick counts in b; back returns to a's history.
trellis::Chart<Player> player_chart(bool with_c = false) {
  trellis::ChartBuilder<Player> b("player");
  b.state("a", [](auto& a) {
    a.on_entry("count a", [](Player& p) { ++p.entries; });
    a.history("h", trellis::History::deep, "a1");
    a.state("a1", [](auto& s) { s.on("next").to("a2"); });
    a.state("a2", [](auto& s) {
      s.state("a21", [](auto& x) { x.on("next").to("a22"); });
      s.state("a22");
    });
    a.on("out").to("b");
  });
  b.state("b", [](auto& s) {
    s.on_entry().send("tick", 10s, "t");
    s.on("tick").call("count tick", [](Player& p) { ++p.ticks; });
    s.on("back").to("h");
    s.on("stay").call("cancel", [](trellis::ChartActions& ops) { ops.cancel("t"); });
  });
  if (with_c) b.state("c");
  return b.build();
}

/// A chart of the same name without a's inner states.
trellis::Chart<Player> smaller_chart() {
  trellis::ChartBuilder<Player> b("player");
  b.state("a", [](auto& a) {
    a.history("h", trellis::History::deep, "a1");
    a.state("a1");
    a.on("out").to("b");
  });
  b.state("b", [](auto& s) { s.on("back").to("h"); });
  return b.build();
}

using Durable = trellis::DurableStateChart<Player>;

trellis::ChartOptions on(const trellis::ManualChartClock& clock) { return {.clock = &clock}; }

}  // namespace

TEST_CASE("durable chart: resumes configuration, history, data and pending sends after reopening") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  trellis::ManualChartClock clock;
  std::vector<trellis::DelayedSend> pending;
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
    CHECK_FALSE(chart.recovery().from_sidecar);
    chart.send("next");
    chart.send("next");
    chart.send("out");  // h records a22; b queues tick
    CHECK(chart.atomic_configuration() == std::vector<std::string>{"b"});
    pending = chart.pending_sends();
    REQUIRE(pending.size() == 1);
    CHECK(chart.epoch() == 3);
  }
  trellis::Context ctx;
  Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
  CHECK(chart.recovery().from_sidecar);
  CHECK(chart.epoch() == 3);
  CHECK(chart.configuration() == std::vector<std::string>{"b"});
  CHECK(chart.data() == Player{1, 0});  // a's entry action did not run again
  const std::vector<trellis::DelayedSend> resumed = chart.pending_sends();
  REQUIRE(resumed.size() == 1);
  CHECK(resumed[0].event.name == "tick");
  CHECK(resumed[0].due == pending[0].due);
  CHECK(resumed[0].seq == pending[0].seq);
  CHECK(resumed[0].id == "t");
  chart.send("back");  // the restored deep history
  CHECK(chart.configuration() == std::vector<std::string>{"a", "a2", "a22"});
  CHECK(chart.data().entries == 2);
}

TEST_CASE("durable chart: a send due during the downtime fires exactly once, at reopening") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  trellis::ManualChartClock clock;
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
    chart.send("out");
    CHECK(chart.fire_due() == 0);  // not due yet
  }
  clock.advance(11s);  // the program is down when tick falls due
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
    CHECK(chart.fired_at_open() == 1);
    CHECK(chart.data().ticks == 1);
    CHECK(chart.pending_sends().empty());
  }
  trellis::Context ctx;
  Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
  CHECK(chart.fired_at_open() == 0);
  CHECK(chart.data().ticks == 1);
}

TEST_CASE("durable chart: a cancelled send is gone from the file") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  trellis::ManualChartClock clock;
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
    chart.send("out");
    chart.send("stay");
    CHECK(chart.pending_sends().empty());
  }
  clock.advance(11s);
  trellis::Context ctx;
  Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
  CHECK(chart.fired_at_open() == 0);
  CHECK(chart.data().ticks == 0);
}

TEST_CASE("durable chart: the sidecar is format version 2 of kind statechart, by state id") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  trellis::ManualChartClock clock(trellis::ChartClock::time_point(5ms));
  trellis::Context ctx;
  Durable chart(ctx, file, player_chart(), {}, {}, on(clock));
  chart.send("next");
  chart.send("out");
  const json doc = json::parse(read_bytes(file));
  CHECK(doc["version"] == 2);
  CHECK(doc["kind"] == "statechart");
  CHECK(doc["epoch"] == 2);
  CHECK(doc["state"]["configuration"] == json{"b"});
  CHECK(doc["state"]["history"]["h"] == json{"a21"});  // deep: the atomic states
  CHECK(doc["state"]["data"] == json{{"entries", 1}, {"ticks", 0}});
  CHECK(doc["state"]["sends"] ==
        json::array({{{"event", "tick"}, {"due_ns", 10'005'000'000LL}, {"seq", 1}, {"id", "t"}}}));
}

TEST_CASE("durable chart: a sidecar naming a state the chart lacks is refused untouched") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart());
    chart.send("next");  // a2, a21: not in the smaller chart
  }
  const std::string bytes = read_bytes(file);
  trellis::Context ctx;
  try {
    Durable chart(ctx, file, smaller_chart());
    FAIL("opened");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::unknown_state);
    CHECK(e.id() == "persist.recovery.unknown_state");
    CHECK(e.path() == file);
    CHECK(std::string(e.what()).find("\"a2\"") != std::string::npos);
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
  }
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("durable chart: a sidecar naming a history state the chart lacks is refused untouched") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart());
    chart.send("out");  // h recorded
  }
  json doc = json::parse(read_bytes(file));
  doc["state"]["history"] = {{"gone", {"a1"}}};
  write_bytes(file, persist_test::with_valid_checksum(doc));
  const std::string bytes = read_bytes(file);
  trellis::Context ctx;
  try {
    Durable chart(ctx, file, player_chart());
    FAIL("opened");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::unknown_state);
    CHECK(std::string(e.what()).find("\"gone\"") != std::string::npos);
  }
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("durable chart: a configuration the chart cannot be in is refused untouched") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart());
  }
  json doc = json::parse(read_bytes(file));
  doc["state"]["configuration"] = {"a", "a1", "b"};  // two children of the root
  write_bytes(file, persist_test::with_valid_checksum(doc));
  const std::string bytes = read_bytes(file);
  trellis::Context ctx;
  try {
    Durable chart(ctx, file, player_chart());
    FAIL("opened");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::bad_state);
  }
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("durable chart: a sidecar of a newer format version is refused untouched") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  {
    trellis::Context ctx;
    Durable chart(ctx, file, player_chart());
  }
  json doc = json::parse(read_bytes(file));
  doc["version"] = trellis::sidecar_version + 1;
  write_bytes(file, persist_test::with_valid_checksum(doc));
  const std::string bytes = read_bytes(file);
  trellis::Context ctx;
  CHECK_THROWS_WITH_AS(Durable(ctx, file, player_chart()), doctest::Contains("format version 3"),
                       trellis::recovery_error);
  CHECK(read_bytes(file) == bytes);
}

TEST_CASE("durable chart: a flat machine's sidecar and a chart's are not taken for each other") {
  ScratchDir dir;
  const fs::path flat = dir / "flat.json";
  const fs::path chart_file = dir / "chart.json";
  trellis::Context ctx;
  {
    trellis::DurableStateMachine<int, int> m(
        ctx, flat, 0, [](int s, int e) -> std::optional<int> { return s + e; });
    m.send(1);
  }
  { Durable chart(ctx, chart_file, player_chart()); }
  const std::string flat_bytes = read_bytes(flat);
  const std::string chart_bytes = read_bytes(chart_file);
  try {
    Durable chart(ctx, flat, player_chart(), {}, {.name = "flat"});
    FAIL("opened");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::wrong_kind);
  }
  try {
    trellis::DurableStateMachine<int, int> m(
        ctx, chart_file, 0, [](int s, int e) -> std::optional<int> { return s + e; });
    FAIL("opened");
  } catch (const trellis::recovery_error& e) {
    CHECK(e.why() == reason::wrong_kind);
    CHECK(e.id() == "persist.recovery.wrong_kind");
  }
  CHECK(read_bytes(flat) == flat_bytes);
  CHECK(read_bytes(chart_file) == chart_bytes);
}

TEST_CASE("durable: a version 1 sidecar written before charts existed still loads") {
  // tests/persist/fixtures/counter-v1.json: a DurableStateMachine<int, int> named "counter"
  // at epoch 7, state 7, written by the build before sidecar format version 2.
  ScratchDir dir;
  const fs::path file = dir / "counter.json";
  const fs::path fixture = fs::path(TRELLIS_PERSIST_FIXTURES) / "counter-v1.json";
  // This build still writes a flat machine's record as exactly those bytes.
  CHECK(trellis::encode_sidecar({"counter", 7, 1, json(7), "2024-05-01T12:00:00.000Z"}) ==
        read_bytes(fixture));
  fs::copy_file(fixture, file);
  trellis::Context ctx;
  trellis::DurableStateMachine<int, int> m(
      ctx, file, 0, [](int s, int e) -> std::optional<int> { return s + e; });
  CHECK(m.recovery().from_sidecar);
  CHECK(m.epoch() == 7);
  CHECK(m.state() == 7);
  m.send(1);
  CHECK(json::parse(read_bytes(file))["version"] == 1);  // flat machines still write version 1
}

TEST_CASE("durable chart: a failed write undoes the step and tells no observer") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  trellis::Context ctx;
  Durable chart(ctx, file, player_chart());
  int told = 0;
  auto sub = chart.on_transition([&](const auto&, const auto&) { ++told; });
  const std::string bytes = read_bytes(file);
  {
    trellis::ScopedFailpoint armed("sidecar.fsync", trellis::FailpointAction::error);
    CHECK_THROWS_AS(chart.send("out"), trellis::persist_error);
  }
  CHECK(told == 0);
  CHECK(chart.configuration() == std::vector<std::string>{"a", "a1"});
  CHECK(chart.pending_sends().empty());
  CHECK(chart.epoch() == 0);
  CHECK(read_bytes(file) == bytes);
  CHECK(chart.send("out") == trellis::SendResult::Transitioned);  // the same step, now written
  CHECK(told == 1);
  CHECK(chart.pending_sends().size() == 1);
}

TEST_CASE("durable chart: a delayed send with a payload is refused, the step undone") {
  trellis::ChartBuilder<Player> b("payload");
  b.state("a", [](auto& s) {
    s.on("go").to("b").call("send with data", [](trellis::ChartActions& ops) {
      ops.send(trellis::ChartEvent("later", 42), 1s, "");
    });
  });
  b.state("b");
  ScratchDir dir;
  const fs::path file = dir / "payload.json";
  trellis::Context ctx;
  Durable chart(ctx, file, b.build());
  try {
    chart.send("go");
    FAIL("accepted");
  } catch (const trellis::unwritable_value& e) {
    CHECK(e.member() == "/state/sends/0/event");
  }
  CHECK(chart.configuration() == std::vector<std::string>{"a"});
  CHECK(chart.pending_sends().empty());
}

TEST_CASE("durable chart: group durability and the journal are refused by name") {
  ScratchDir dir;
  trellis::ThreadSafeContext ctx;
  CHECK_THROWS_AS(
      trellis::ThreadSafeDurableStateChart<Player>(ctx, dir / "g.json", player_chart(), {},
                                                   {.durability = trellis::Durability::group}),
      trellis::invalid_option);
  CHECK_THROWS_AS(trellis::ThreadSafeDurableStateChart<Player>(ctx, dir / "j.json", player_chart(),
                                                               {}, {.journal = true}),
                  trellis::invalid_option);
  CHECK_FALSE(fs::exists(dir / "g.json"));
}

TEST_CASE("durable chart: async mode persists in the background; flush() makes it durable") {
  ScratchDir dir;
  const fs::path file = dir / "player.json";
  {
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeDurableStateChart<Player> chart(ctx, file, player_chart(), {},
                                                       {.durability = trellis::Durability::async});
    chart.send("next");
    chart.send("out");
    chart.flush();
    CHECK(chart.durable_through().get() == 2);
    CHECK(json::parse(read_bytes(file))["state"]["configuration"] == json{"b"});
  }
  trellis::ThreadSafeContext ctx;
  trellis::ThreadSafeDurableStateChart<Player> chart(ctx, file, player_chart());
  CHECK(chart.configuration() == std::vector<std::string>{"b"});
}

TEST_CASE("durable chart: a chart without data persists null") {
  trellis::ChartBuilder<> b("plain");
  b.state("x", [](auto& s) { s.on("go").to("y"); });
  b.state("y");
  ScratchDir dir;
  const fs::path file = dir / "plain.json";
  {
    trellis::Context ctx;
    trellis::DurableStateChart<> chart(ctx, file, b.build());
    chart.send("go");
  }
  CHECK(json::parse(read_bytes(file))["state"]["data"].is_null());
  trellis::Context ctx;
  trellis::DurableStateChart<> chart(ctx, file, b.build());
  CHECK(chart.configuration() == std::vector<std::string>{"y"});
}

TEST_CASE("durable chart: concurrent senders on a ThreadSafeContext lose no step across a reopen") {
  trellis::ChartBuilder<Player> b("counter");
  b.state("x", [](auto& s) { s.on("tick").call("count", [](Player& p) { ++p.ticks; }); });
  const trellis::Chart<Player> chart_def = b.build();
  ScratchDir dir;
  const fs::path file = dir / "counter.json";
  constexpr int threads = 4;
  constexpr int each = 25;
  {
    trellis::ThreadSafeContext ctx;
    trellis::ThreadSafeDurableStateChart<Player> chart(ctx, file, chart_def);
    std::vector<std::thread> senders;
    for (int t = 0; t < threads; ++t)
      senders.emplace_back([&] {
        for (int i = 0; i < each; ++i) (void)chart.send("tick");
      });
    for (auto& s : senders) s.join();
    CHECK(chart.epoch() == threads * each);
  }
  trellis::ThreadSafeContext ctx;
  trellis::ThreadSafeDurableStateChart<Player> chart(ctx, file, chart_def);
  CHECK(chart.data().ticks == threads * each);
  CHECK(chart.epoch() == threads * each);
}

/// @file
/// Benchmarks of statecharts (issue 13 §5): an external event that takes one transition in a
/// 3-level chart with two parallel regions, on StateChart and ThreadSafeStateChart, beside the
/// same behaviour as a flat StateMachine and as a hand-written switch, in the same binary.
///
/// The chart: `player` (compound) holds `running` (parallel) with the regions `video`
/// (`buffering`, `streaming`) and `audio` (`muted`, `loud`), and a `stopped` state. The events
/// alternate `stream` (buffering -> streaming) and `buffer` (streaming -> buffering): each one
/// takes exactly one transition, exits one atomic state and enters another.
///
/// - `baseline/switch/send`: the two regions as enums in a struct, the event an enum, one
///   switch: the floor. `baseline/switch/send_by_name`: the same, the event given by name (a
///   string compared first), as a chart receives it.
/// - `machine/StateMachine/send`: a flat machine over the video region's enum.
/// - `chart/StateChart/send`, `chart/ThreadSafeStateChart/send`: the chart (uncontended).
/// - `chart/StateChart/send_observed`: with an `in("streaming")` signal and an on_enter
///   observer attached.
/// The final configuration is checked after each timed loop.
///
/// Loading (issue 13 §5: a 1,000-state SCXML file in at most 20 ms): `load/scxml/1000_states`
/// is `trellis::scxml::load_text` on a generated document of 1,000 states (100 compound states
/// of 9 atomic ones, 1,900 transitions), beside `baseline/pugixml/parse_1000_states`, the XML
/// parse alone (pugixml, which the loader uses), and `build/ChartBuilder/1000_states`, the same
/// chart built in code.

#include <benchmark/benchmark.h>
#include "bench_support.hpp"

#include <pugixml.hpp>
#include <trellis/machine/state_machine.hpp>
#include <trellis/scxml/load.hpp>
#include <trellis/statechart.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace {

using trellis_bench::check;

trellis::Chart<> player_chart() {
  trellis::ChartBuilder<> b("media");
  b.state("player", [](auto& p) {
    p.parallel("running", [](auto& r) {
      r.state("video", [](auto& v) {
        v.state("buffering", [](auto& s) { s.on("stream").to("streaming"); });
        v.state("streaming", [](auto& s) { s.on("buffer").to("buffering"); });
      });
      r.state("audio", [](auto& a) {
        a.state("muted", [](auto& s) { s.on("unmute").to("loud"); });
        a.state("loud", [](auto& s) { s.on("mute").to("muted"); });
      });
    });
    p.on("stop").to("stopped");
  });
  b.state("stopped", [](auto& s) { s.on("play").to("player"); });
  return b.build();
}

// --- the hand-written floor -----------------------------------------------------------------
enum class Video { buffering, streaming };
enum class Audio { muted, loud };
enum class Mode { running, stopped };
enum class Ev { stream, buffer, unmute, mute, stop, play };

struct Player {
  Mode mode = Mode::running;
  Video video = Video::buffering;
  Audio audio = Audio::muted;
};

// One external event; false when nothing happens.
bool step(Player& p, Ev e) {
  if (p.mode == Mode::stopped) {
    if (e != Ev::play) return false;
    p = Player{};
    return true;
  }
  switch (e) {
    case Ev::stream:
      if (p.video != Video::buffering) return false;
      p.video = Video::streaming;
      return true;
    case Ev::buffer:
      if (p.video != Video::streaming) return false;
      p.video = Video::buffering;
      return true;
    case Ev::unmute:
      if (p.audio != Audio::muted) return false;
      p.audio = Audio::loud;
      return true;
    case Ev::mute:
      if (p.audio != Audio::loud) return false;
      p.audio = Audio::muted;
      return true;
    case Ev::stop:
      p.mode = Mode::stopped;
      return true;
    case Ev::play:
      return false;
  }
  return false;
}

std::optional<Ev> by_name(std::string_view n) {
  if (n == "stream") return Ev::stream;
  if (n == "buffer") return Ev::buffer;
  if (n == "unmute") return Ev::unmute;
  if (n == "mute") return Ev::mute;
  if (n == "stop") return Ev::stop;
  if (n == "play") return Ev::play;
  return std::nullopt;
}

template <class T>
const T& opaque(const T& e) {
  const T* p = &e;
  benchmark::DoNotOptimize(p);
  return *p;
}

void switch_send(benchmark::State& st) {
  Player p;
  benchmark::DoNotOptimize(&p);
  const Ev events[2] = {Ev::stream, Ev::buffer};
  std::size_t i = 0;
  long taken = 0;
  for (auto _ : st) {
    taken += step(p, opaque(events[i]));
    i ^= 1U;
    benchmark::ClobberMemory();
  }
  check(st, taken == st.iterations(), "an event was not taken");
}

void switch_send_by_name(benchmark::State& st) {
  Player p;
  benchmark::DoNotOptimize(&p);
  const std::string events[2] = {"stream", "buffer"};
  std::size_t i = 0;
  long taken = 0;
  for (auto _ : st) {
    if (auto e = by_name(opaque(events[i]))) taken += step(p, *e);
    i ^= 1U;
    benchmark::ClobberMemory();
  }
  check(st, taken == st.iterations(), "an event was not taken");
}

void machine_send(benchmark::State& st) {
  trellis::Context ctx;
  trellis::StateMachine<Video, Ev> m{ctx, Video::buffering,
                                     [](Video v, Ev e) -> std::optional<Video> {
                                       if (v == Video::buffering && e == Ev::stream)
                                         return Video::streaming;
                                       if (v == Video::streaming && e == Ev::buffer)
                                         return Video::buffering;
                                       return std::nullopt;
                                     }};
  const Ev events[2] = {Ev::stream, Ev::buffer};
  std::size_t i = 0;
  long taken = 0;
  for (auto _ : st) {
    taken += m.send(opaque(events[i])) == trellis::SendResult::Transitioned;
    i ^= 1U;
  }
  check(st, taken == st.iterations(), "an event was not taken");
}

template <class Ctx>
void chart_send(benchmark::State& st) {
  Ctx ctx;
  trellis::BasicStateChart<trellis::NoData, Ctx> chart(ctx, player_chart());
  const trellis::ChartEvent events[2] = {trellis::ChartEvent("stream"),
                                         trellis::ChartEvent("buffer")};
  std::size_t i = 0;
  long taken = 0;
  for (auto _ : st) {
    taken += chart.send(opaque(events[i])) == trellis::SendResult::Transitioned;
    i ^= 1U;
  }
  check(st, taken == st.iterations(), "an event was not taken");
  check(st, chart.snapshot().contains("muted"), "the audio region moved");
}

void chart_send_observed(benchmark::State& st) {
  trellis::Context ctx;
  trellis::StateChart<> chart(ctx, player_chart());
  trellis::Signal<bool> streaming = chart.in("streaming");
  long entered = 0;
  auto sub = chart.on_enter("streaming", [&] { ++entered; });
  const trellis::ChartEvent events[2] = {trellis::ChartEvent("stream"),
                                         trellis::ChartEvent("buffer")};
  std::size_t i = 0;
  for (auto _ : st) {
    chart.send(opaque(events[i]));
    i ^= 1U;
  }
  check(st, entered == (st.iterations() + 1) / 2, "on_enter missed an entry");
  benchmark::DoNotOptimize(streaming.get());
}

// --- loading a 1,000-state chart -------------------------------------------------------------
constexpr int groups = 100;
constexpr int leaves = 9;

std::string big_scxml() {
  std::string x = R"(<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" initial="g0">)";
  x += "\n";
  for (int g = 0; g < groups; ++g) {
    const std::string gid = "g" + std::to_string(g);
    x += "  <state id=\"" + gid + "\">\n";
    for (int l = 0; l < leaves; ++l) {
      const std::string id = gid + "_s" + std::to_string(l);
      const std::string next = gid + "_s" + std::to_string((l + 1) % leaves);
      const std::string other = "g" + std::to_string((g + 1) % groups);
      x += "    <state id=\"" + id + "\">\n";
      x += "      <transition event=\"next\" target=\"" + next + "\"/>\n";
      x += "      <transition event=\"jump\" target=\"" + other + "\"/>\n";
      x += "    </state>\n";
    }
    x += "  </state>\n";
  }
  x += "</scxml>\n";
  return x;
}

trellis::Chart<> big_built() {
  trellis::ChartBuilder<> b("big");
  for (int g = 0; g < groups; ++g) {
    const std::string gid = "g" + std::to_string(g);
    auto& group = b.state(gid);
    for (int l = 0; l < leaves; ++l) {
      auto& s = group.state(gid + "_s" + std::to_string(l));
      s.on("next").to(gid + "_s" + std::to_string((l + 1) % leaves));
      s.on("jump").to("g" + std::to_string((g + 1) % groups));
    }
  }
  return b.build();
}

void load_1000(benchmark::State& st) {
  const std::string text = big_scxml();
  std::size_t states = 0;
  for (auto _ : st) {
    trellis::Chart<> c = trellis::scxml::load_text(text);
    states = c.definition().states.size();
    benchmark::DoNotOptimize(states);
  }
  check(st, states == 1 + groups * (leaves + 1), "wrong number of states");
  st.counters["bytes"] = static_cast<double>(text.size());
}

void pugixml_parse_1000(benchmark::State& st) {
  const std::string text = big_scxml();
  std::size_t elements = 0;
  for (auto _ : st) {
    pugi::xml_document doc;
    doc.load_buffer(text.data(), text.size());
    elements = 0;
    for (pugi::xml_node g : doc.first_child().children())
      for (pugi::xml_node s : g.children())
        elements += 1 + static_cast<std::size_t>(std::distance(s.begin(), s.end()));
    benchmark::DoNotOptimize(elements);
  }
  check(st, elements == groups * leaves * 3, "wrong number of elements");
}

void build_1000(benchmark::State& st) {
  std::size_t states = 0;
  for (auto _ : st) {
    trellis::Chart<> c = big_built();
    states = c.definition().states.size();
    benchmark::DoNotOptimize(states);
  }
  check(st, states == 1 + groups * (leaves + 1), "wrong number of states");
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("baseline/switch/send", switch_send);
  benchmark::RegisterBenchmark("baseline/switch/send_by_name", switch_send_by_name);
  benchmark::RegisterBenchmark("machine/StateMachine/send", machine_send);
  benchmark::RegisterBenchmark("chart/StateChart/send", chart_send<trellis::Context>);
  benchmark::RegisterBenchmark("chart/ThreadSafeStateChart/send",
                               chart_send<trellis::ThreadSafeContext>);
  benchmark::RegisterBenchmark("chart/StateChart/send_observed", chart_send_observed);
  benchmark::RegisterBenchmark("baseline/pugixml/parse_1000_states", pugixml_parse_1000)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("load/scxml/1000_states", load_1000)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("build/ChartBuilder/1000_states", build_1000)
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return trellis_bench::failed.load() ? 1 : 0;
}

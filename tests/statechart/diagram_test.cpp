// Diagrams of statecharts: Mermaid stateDiagram-v2 and Graphviz DOT.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "trellis/statechart.hpp"
#include "trellis/statechart/diagram.hpp"
#include "trellis/testing/golden.hpp"

using namespace trellis;
using namespace std::chrono_literals;
namespace tt = trellis::testing;

namespace {

const std::filesystem::path golden_dir{TRELLIS_STATECHART_GOLDEN_DIR};

struct Player {
  int position = 0;
  int volume = 5;
};

// Nested, parallel, shallow and deep history, a guard, In(), a delayed send and its cancel,
// raise, log, eventless, internal and targetless transitions, entry and exit actions.
Chart<Player> player_chart() {
  ChartBuilder<Player> b("player");
  b.state("stopped", [](auto& s) {
    s.on_entry("rewind", [](Player& p) { p.position = 0; });
    s.on("play").to("playing");
    s.on("power").to("off");
  });
  b.state("playing", [](auto& s) {
    s.on("stop").to("stopped");
    s.on("pause").when("started", [](const Player& p) { return p.position > 0; }).to("paused");
    s.on("volume.*").call("set volume", [](Player& p) { ++p.volume; });
    s.on("seek").internal().to("buffering");
    s.parallel("running", [](auto& p) {
      p.state("video", [](auto& r) {
        r.state("buffering", [](auto& st) {
          st.on_entry().send("loaded", 500ms, "load");
          st.on_exit().cancel("load");
          st.on("loaded").to("streaming");
        });
        r.state("streaming", [](auto& st) {
          st.on("stall").to("buffering").raise("stalled");
          st.on("tick").when_in("loud").call("advance", [](Player& p) { ++p.position; });
        });
      });
      p.state("audio", [](auto& r) {
        r.state("loud", [](auto& st) { st.on("mute").to("muted"); });
        r.state("muted", [](auto& st) { st.on("mute").to("loud"); });
        r.history("audio_h", History::shallow, "loud");
      });
    });
    s.history("resume", History::deep, "running");
  });
  b.state("paused", [](auto& s) {
    s.on("play").to("resume");
    s.on("stop").to("stopped");
    s.on("eject").to("ejecting");
  });
  b.state("ejecting", [](auto& s) { s.always().to("stopped").log("ejected"); });
  b.final("off");
  return b.build();
}

std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[256];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  const int status = pclose(pipe);
  return status == 0 ? out : out + "\n(exit status " + std::to_string(status) + ")";
}

bool dot_installed() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    const auto first = l.find_first_not_of(' ');
    out.push_back(first == std::string::npos ? std::string() : l.substr(first));
  }
  return out;
}

// The braces open and close in order, and all close.
bool balanced_braces(const std::string& text) {
  int depth = 0;
  for (const char c : text) {
    if (c == '{') ++depth;
    if (c == '}' && --depth < 0) return false;
  }
  return depth == 0;
}

// Whether the Mermaid text declares a state shown as `label`: a line `label`, `state label {`,
// or `state "label" as <id>` (the label as Mermaid reads it, escaped).
bool declares(const std::string& mermaid, const std::string& label) {
  for (const std::string& l : lines_of(mermaid)) {
    if (l == label || l == "state " + label + " {" || l.starts_with("state \"" + label + "\" as "))
      return true;
  }
  return false;
}

}  // namespace

TEST_CASE("chart diagram: the Mermaid diagram matches the golden file") {
  CHECK(tt::check_golden(golden_dir / "player.mmd", to_mermaid(player_chart())));
}

TEST_CASE("chart diagram: the DOT diagram matches the golden file") {
  CHECK(tt::check_golden(golden_dir / "player.dot", to_dot(player_chart())));
}

TEST_CASE("chart diagram: the Mermaid text has balanced braces and declares every state") {
  const Chart<Player> chart = player_chart();
  const std::string text = to_mermaid(chart);
  CHECK(text.starts_with("stateDiagram-v2\n"));
  CHECK(balanced_braces(text));
  for (const std::string id : {"stopped", "playing", "running", "video", "buffering", "streaming",
                               "audio", "loud", "muted", "paused", "ejecting", "off"}) {
    CHECK_MESSAGE(declares(text, id), id);
  }
  CHECK(declares(text, "H"));   // audio_h
  CHECK(declares(text, "H*"));  // resume
}

TEST_CASE("chart diagram: parallel regions are separated by -- inside the parallel state") {
  const auto lines = lines_of(to_mermaid(player_chart()));
  const auto at = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) - lines.begin();
  };
  CHECK(at("state running {") < at("state video {"));
  CHECK(at("state video {") < at("--"));
  CHECK(at("--") < at("state audio {"));
}

TEST_CASE("chart diagram: a compound state's initial and a final state use [*] in their block") {
  const std::string text = to_mermaid(player_chart());
  CHECK(text.find("\n    [*] --> stopped\n") != std::string::npos);
  CHECK(text.find("\n        [*] --> running\n") != std::string::npos);
  CHECK(text.find("\n    off --> [*]\n") != std::string::npos);
}

TEST_CASE("chart diagram: transitions are labelled event [guard] / actions") {
  const std::string text = to_mermaid(player_chart());
  CHECK(text.find("playing --> paused : pause #91;started#93;\n") != std::string::npos);
  CHECK(text.find("streaming --> buffering : stall / raise stalled\n") != std::string::npos);
  CHECK(text.find("ejecting --> stopped : (always) / log ejected\n") != std::string::npos);
  CHECK(text.find("playing --> playing : volume.* / set volume (targetless)\n") !=
        std::string::npos);
  CHECK(text.find("playing --> buffering : seek (internal)\n") != std::string::npos);
  CHECK(text.find("buffering : entry / send loaded after 500ms (id load)\n") != std::string::npos);
}

TEST_CASE("chart diagram: a transition to a history state points at the H state") {
  const std::string text = to_mermaid(player_chart());
  CHECK(text.find("state \"H*\" as resume\n") != std::string::npos);
  CHECK(text.find("paused --> resume : play\n") != std::string::npos);
  CHECK(text.find("resume --> running\n") != std::string::npos);  // its default
}

TEST_CASE("chart diagram: an arrow between siblings is written inside their parent") {
  const auto lines = lines_of(to_mermaid(player_chart()));
  const auto at = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) - lines.begin();
  };
  // inside video's block, before it closes (the audio block follows it)
  CHECK(at("buffering --> streaming : loaded") < at("state audio {"));
  // an arrow out of a nested state is written at the top level, after every state
  CHECK(at("playing --> buffering : seek (internal)") > at("off"));
}

TEST_CASE("chart diagram: DOT draws compound states as clusters, parallel regions dashed") {
  const std::string text = to_dot(player_chart());
  CHECK(text.starts_with("digraph \"player\" {\n  compound=true;\n"));
  CHECK(text.find("subgraph \"cluster_playing\" {\n    label=\"playing\";\n    style=rounded;") !=
        std::string::npos);
  CHECK(text.find("subgraph \"cluster_video\" {\n        label=\"video\";\n        "
                  "style=\"rounded,dashed\";") != std::string::npos);
  CHECK(balanced_braces(text));
}

TEST_CASE("chart diagram: DOT arrows to and from a cluster end at its border") {
  const std::string text = to_dot(player_chart());
  // stopped -> playing: to playing's start point, clipped at the cluster
  CHECK(text.find("\"stopped\" -> \"playing [*]\" [label=\"play\", lhead=\"cluster_playing\"];") !=
        std::string::npos);
  // playing -> stopped: from inside, clipped at the cluster
  CHECK(text.find("\"playing [*]\" -> \"stopped\" [label=\"stop\", ltail=\"cluster_playing\"];") !=
        std::string::npos);
  // playing -> buffering: the head is inside the tail's cluster, so no ltail
  CHECK(text.find("\"playing [*]\" -> \"buffering\" [label=\"seek (internal)\"];") !=
        std::string::npos);
}

TEST_CASE("chart diagram: DOT marks finals with a double border and history as H / H*") {
  const std::string text = to_dot(player_chart());
  CHECK(text.find("\"off\" [peripheries=2];") != std::string::npos);
  CHECK(text.find("\"resume\" [shape=circle, label=\"H*\"];") != std::string::npos);
  CHECK(text.find("\"audio_h\" [shape=circle, label=\"H\"];") != std::string::npos);
  // its default: to the parallel state's border, anchored in its first region
  CHECK(text.find("\"resume\" -> \"video [*]\" [lhead=\"cluster_running\", style=dashed];") !=
        std::string::npos);
}

namespace {

// Ids and names that are not identifiers, Mermaid keywords, and text that is syntax in one
// format or the other.
Chart<> hostile_chart() {
  ChartBuilder<> b("my \"chart\"\\");
  b.state("s1.1", [](auto& s) {
    s.on("go").when("a: b; c # d % e {f} <g> [h] direction LR", [] { return true; }).to("x-y");
  });
  b.state("x-y", [](auto& s) {
    s.state("default");
    s.state("state", [](auto& t) { t.on("back").to("s1.1"); });
  });
  b.state("q\"uote\\n", [](auto& s) { s.on("e").to("s1.1"); });
  b.state("new\nline", [](auto& s) { s.on("e").to("q\"uote\\n"); });
  b.state("[*]");  // the name the DOT writer would give the root's start point
  b.state("bad\xff utf8", [](auto& s) { s.on("e").to("[*]"); });
  b.initial("s1.1");
  ChartBuildOptions options;
  options.allow_unreachable = true;
  return b.build(options);
}

}  // namespace

TEST_CASE("chart diagram: Mermaid gives an id of its own to ids that are not plain") {
  const std::string text = to_mermaid(hostile_chart());
  CHECK(text.find("state \"s1.1\" as trellis_state_1\n") != std::string::npos);
  CHECK(text.find("state \"x-y\" as trellis_state_2\n    state trellis_state_2 {\n") !=
        std::string::npos);
  CHECK(text.find("state \"default\" as trellis_state_3\n") != std::string::npos);
  CHECK(text.find("state \"state\" as trellis_state_4\n") != std::string::npos);
  CHECK(text.find("state \"q#quot;uote\\n\" as trellis_state_5\n") != std::string::npos);
  CHECK(text.find("state \"new line\" as trellis_state_6\n") != std::string::npos);
  CHECK(text.find("state \"bad? utf8\" as trellis_state_8\n") != std::string::npos);
  CHECK(balanced_braces(text));
}

TEST_CASE("chart diagram: Mermaid escapes the syntax in a label with entity codes") {
  const std::string text = to_mermaid(hostile_chart());
  CHECK(text.find("trellis_state_1 --> trellis_state_2 : go #91;a#58; b#59; c #35; d #37; e "
                  "#123;f#125; #lt;g#gt; #91;h#93; #100;irection LR#93;\n") != std::string::npos);
}

TEST_CASE("chart diagram: DOT quotes every name, escaping quotes and backslashes") {
  const std::string text = to_dot(hostile_chart());
  CHECK(text.starts_with("digraph \"my \\\"chart\\\"\\\\\" {\n"));
  CHECK(text.find("\"q\\\"uote\\\\n\" -> \"s1.1\" [label=\"e\"];") != std::string::npos);
  CHECK(text.find("\"new\\nline\";") != std::string::npos);
  CHECK(text.find("\"bad? utf8\";") != std::string::npos);
  // the root's start point does not take the name of the state "[*]"
  CHECK(text.find("\"[*]'\" [shape=point, width=0.15, label=\"\"];") != std::string::npos);
  CHECK(text.find("\"[*]'\" -> \"s1.1\";") != std::string::npos);
  CHECK(text.find("\"bad? utf8\" -> \"[*]\" [label=\"e\"];") != std::string::npos);
}

TEST_CASE("chart diagram: dot -Tsvg accepts the DOT output without a warning") {
  if (!dot_installed()) {
    MESSAGE("skipped: Graphviz's dot is not installed (Debian: graphviz)");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() /
                   ("trellis_chart_dot_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  for (const auto& [name, text] : {std::pair{std::string("player"), to_dot(player_chart())},
                                   std::pair{std::string("hostile"), to_dot(hostile_chart())}}) {
    const auto file = dir / (name + ".dot");
    std::ofstream(file) << text;
    const std::string out = run_command("dot -Tsvg '" + file.string() + "' -o '" +
                                        (dir / (name + ".svg")).string() + "' 2>&1");
    CHECK_MESSAGE(out.empty(), name, ": ", out);
    CHECK(std::filesystem::file_size(dir / (name + ".svg")) > 0);
  }
  std::filesystem::remove_all(dir);
}

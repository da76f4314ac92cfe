// The document cycle of an AI writing tool as a state machine declared by a transition table:
// run one cycle, show the exhaustive matrix, and draw the machine (Mermaid, DOT, and SVG when
// Graphviz's `dot` is installed).
//
// Usage: document_cycle [OUTPUT_DIR]   (default: the current directory)

#include <trellis/machine/diagram.hpp>
#include <trellis/machine/state_machine.hpp>
#include <trellis/testing.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "document_cycle.hpp"

using doc_cycle::Event;
using doc_cycle::Phase;

namespace {

std::string_view name(Phase p) { return trellis::enumeration<Phase>::name(p); }
std::string_view name(Event e) { return trellis::enumeration<Event>::name(e); }

void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file.string());
  std::cout << "wrote " << file.filename().string() << "\n";
}

}  // namespace

int run(const std::filesystem::path& dir) {
  trellis::Context ctx;
  trellis::StateMachine<Phase, Event> cycle{ctx, Phase::Committed, doc_cycle::table()};
  auto open = ctx.computed([cell = cycle.state_cell()] {
    const Phase p = cell.get();
    return p != Phase::Committed && p != Phase::Abandoned;
  });
  auto log = cycle.on_transition([&](const Phase& from, const Phase& to) {
    std::cout << name(from) << " -> " << name(to) << (open.get() ? "" : " (cycle closed)") << "\n";
  });

  for (Event e : {Event::StartPreflight, Event::ResponseCaptured, Event::Bookkeeping,
                  Event::RecoverablePreflightTimeout, Event::ResponseCaptured, Event::WriteApplied,
                  Event::Committed, Event::Committed, Event::WriteApplied}) {
    const trellis::SendResult r = cycle.send(e);
    if (r != trellis::SendResult::Transitioned)
      std::cout << name(e) << ": " << r.name() << " at " << name(cycle.state()) << "\n";
  }

  std::cout << "\n"
            << trellis::testing::to_markdown(
                   trellis::testing::transition_matrix(doc_cycle::table()));
  std::filesystem::create_directories(dir);
  write(dir / "document_cycle.mmd",
        trellis::to_mermaid(doc_cycle::table(), Phase::PreflightStarted));
  write(dir / "document_cycle.dot", trellis::to_dot(doc_cycle::table(), Phase::PreflightStarted));
  if (std::system("command -v dot > /dev/null 2>&1") == 0) {
    const std::string cmd = "dot -Tsvg '" + (dir / "document_cycle.dot").string() + "' -o '" +
                            (dir / "document_cycle.svg").string() + "'";
    if (std::system(cmd.c_str()) == 0) std::cout << "wrote document_cycle.svg\n";
  } else {
    std::cout << "no SVG: Graphviz's dot is not installed\n";
  }
  std::cout << "done\n";
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : ".");
  } catch (const std::exception& e) {
    std::cerr << "document_cycle: " << e.what() << "\n";
    return 1;
  }
}

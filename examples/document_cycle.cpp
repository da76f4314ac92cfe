// The document cycle of an AI writing tool, on a durable sidecar: a struct state (a phase plus
// the cycle's bookkeeping), every mutator an event of its own type, and one transition table
// (examples/document_cycle.hpp) that alone decides. The program runs a cycle part-way, shows a
// bookkeeping record on a closed cycle rejected, reopens the machine from its sidecar as a
// restarted process would and goes on, then prints the Mermaid diagram (and writes it, with
// DOT, and SVG when Graphviz's `dot` is installed).
//
// Usage: document_cycle [DIR]   (default: the current directory)
//   DIR/document_cycle.json is the sidecar: each run starts it afresh, so the story is the same.

#include <trellis/machine/diagram.hpp>
#include <trellis/persist/durable_state_machine.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "document_cycle.hpp"
#include "document_cycle_json.hpp"

using namespace doc_cycle;
using Machine = trellis::DurableStateMachine<Cycle, Event>;

namespace {

std::string_view name(Phase p) { return trellis::enumeration<Phase>::name(p); }

std::string summary(const Cycle& c) {
  std::string out =
      "cycle " + std::to_string(c.number) + " " + std::string(name(c.phase)) + ", pending [";
  for (std::size_t i = 0; i < c.pending_writes.size(); ++i)
    out += (i ? " " : "") + c.pending_writes[i];
  out +=
      "], queue head " + std::to_string(c.queue_head) + ", writes " + std::to_string(c.write_count);
  return out;
}

// Sends each (label, event) and prints what the table decided.
void send_all(Machine& cycle, const std::vector<std::pair<std::string, Event>>& steps) {
  for (const auto& [label, event] : steps) {
    const trellis::SendResult r = cycle.send(event);
    std::cout << label << ": " << r.name() << " -> " << summary(cycle.state()) << "\n";
  }
}

void expect(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("check failed: ") + what);
}

void write(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file.string());
  std::cout << "wrote " << file.filename().string() << "\n";
}

}  // namespace

int run(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path sidecar = dir / "document_cycle.json";
  std::filesystem::remove(sidecar);
  Cycle before_restart;
  {
    trellis::Context ctx;
    Machine cycle{ctx, sidecar, Cycle{}, table()};  // sync: each transition on disk at send()
    auto committed = cycle.on_enter(Phase::Committed, [&] {
      std::cout << "  (cycle " << cycle.state().number << " committed)\n";
    });
    std::cout << "fresh start: " << summary(cycle.state()) << "\n";
    send_all(cycle, {{"StartPreflight{doc-42}", StartPreflight{"doc-42"}},
                     {"RecordCaptureHash{c1}", RecordCaptureHash{"c1"}},
                     {"RecordPendingWrite{w1}", RecordPendingWrite{"w1"}},
                     {"RecordPendingWrite{w2}", RecordPendingWrite{"w2"}},
                     {"ResponseCaptured{r1}", ResponseCaptured{"r1"}},
                     {"RecoverablePreflightTimeout", RecoverablePreflightTimeout{}},
                     {"ResponseCaptured{r2}", ResponseCaptured{"r2"}},
                     {"WriteApplied{w1}", WriteApplied{"w1"}},
                     {"AdvanceQueueHead{17}", AdvanceQueueHead{17}}});
    before_restart = cycle.state();
    std::cout << "-- the process stops here --\n";
  }
  {
    trellis::Context ctx;
    Machine cycle{ctx, sidecar, Cycle{}, table()};
    auto committed = cycle.on_enter(Phase::Committed, [&] {
      std::cout << "  (cycle " << cycle.state().number << " committed)\n";
    });
    std::cout << "reopened at epoch " << cycle.recovery().epoch << ": " << summary(cycle.state())
              << "\n";
    expect(cycle.recovery().from_sidecar && cycle.state() == before_restart,
           "the reopened machine starts where the first stopped");
    send_all(cycle, {{"WriteApplied{w2}", WriteApplied{"w2"}},
                     {"Committed", Committed{}},
                     {"Committed", Committed{}}});
    const Cycle closed = cycle.state();
    expect(!cycle.can(RecordPendingWrite{"w3"}), "can() refuses bookkeeping on a closed cycle");
    send_all(cycle, {{"RecordPendingWrite{w3}", RecordPendingWrite{"w3"}}});
    expect(cycle.state() == closed, "a rejected record leaves the closed cycle as it was");
    send_all(cycle, {{"StartPreflight{doc-43}", StartPreflight{"doc-43"}},
                     {"Abandoned{user closed the document}", Abandoned{"user closed the document"}},
                     {"AdvanceQueueHead{18}", AdvanceQueueHead{18}}});
  }

  const std::string mermaid = trellis::to_mermaid(table(), Phase::PreflightStarted);
  std::cout << "\n" << mermaid << "\n";
  write(dir / "document_cycle.mmd", mermaid);
  write(dir / "document_cycle.dot", trellis::to_dot(table(), Phase::PreflightStarted));
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

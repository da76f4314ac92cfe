// SPDX-License-Identifier: MIT
// The SCXML conformance suites nobody in this project wrote: the SCION test framework
// (npm @scion-scxml/test-framework 2.0.16, fetched into the build directory by the ctest fixture
// trellis_scion_fetch, cmake/FetchScion.cmake) and the W3C IRP tests converted in the same
// package (test/w3c-ecma).
//
// Every document under package/test/<group>/ that has a JSON file is loaded with
// trellis::scxml::load_file (allow_unused_ecmascript: the documents declare the ecmascript
// datamodel but most use none of it) and run on a StateChart<NoData> with a ManualChartClock:
// - SCION: the initial atomic configuration, then per JSON event (`after`: advance the clock
//   that many milliseconds and deliver the due sends first) the atomic configuration after the
//   event's macrostep, each compared with the JSON as a set (`legacySemantics` is ignored: it
//   holds the answers of pre-2015 SCION).
// - W3C: the JSON's events if it has some, then the delayed sends in due order until the chart
//   is done (bounded); pass = done in the final state `pass`.
// A document the loader refuses with scxml_error is "excluded" with the loader's reason;
// kDifferent lists deliberate semantic differences. docs/scxml-conformance.md is the table of
// every result: the test fails when it is stale (TRELLIS_UPDATE_CONFORMANCE=1 rewrites it), when
// any document that is not excluded fails, or when fewer pass than the floors below.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "trellis/reactive/context.hpp"
#include "trellis/scxml.hpp"
#include "trellis/statechart.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The least number of documents that must pass: what this runner measured when the floors were
// set. A loader that starts refusing documents (they would become "excluded") fails here.
constexpr int kScionFloor = 96;
constexpr int kW3cFloor = 29;

// Deliberate differences: "group/name" -> why trellis answers otherwise (see run_listed).
const std::map<std::string, std::string, std::less<>> kDifferent = {};

// How many delayed-send deliveries a W3C run may take before it counts as a hang.
constexpr int kMaxTimerRounds = 1000;

enum class Verdict { pass, fail, excluded };

struct Outcome {
  std::string group;
  std::string name;
  Verdict verdict = Verdict::pass;
  std::string reason;
};

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : std::string(fallback);
}

fs::path suite_dir() { return env_or("TRELLIS_SCION_DIR", TRELLIS_SCION_DIR); }
fs::path doc_path() { return env_or("TRELLIS_CONFORMANCE_DOC", TRELLIS_CONFORMANCE_DOC); }

// "test10" after "test9": digit runs compare by value.
bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i])) != 0;
    const bool db = std::isdigit(static_cast<unsigned char>(b[j])) != 0;
    if (da && db) {
      std::size_t ei = i;
      std::size_t ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei])) != 0) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej])) != 0) ++ej;
      const std::string_view na = a.substr(i, ei - i);
      const std::string_view nb = b.substr(j, ej - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string show(const std::set<std::string>& ids) {
  std::string out = "{";
  for (const auto& id : ids) out += (out.size() > 1 ? " " : "") + id;
  return out + "}";
}

std::set<std::string> as_set(const std::vector<std::string>& ids) {
  return {ids.begin(), ids.end()};
}

std::set<std::string> as_set(const json& ids) {
  std::set<std::string> out;
  for (const auto& id : ids) out.insert(id.get<std::string>());
  return out;
}

// A mismatch between the chart's atomic configuration and the JSON, or "" when they agree.
std::string compare(std::string_view when, const std::vector<std::string>& got, const json& want) {
  const auto g = as_set(got);
  const auto w = as_set(want);
  if (g == w) return "";
  return std::string(when) + ": configuration " + show(g) + ", expected " + show(w);
}

// Runs the SCION expectations; "" when the chart meets them all.
std::string run_scion(trellis::StateChart<trellis::NoData>& chart, trellis::ManualChartClock& clock,
                      const json& expect) {
  if (auto bad =
          compare("initial", chart.atomic_configuration(), expect.at("initialConfiguration"));
      !bad.empty())
    return bad;
  int i = 0;
  for (const auto& step : expect.value("events", json::array())) {
    const std::string name = step.at("event").at("name").get<std::string>();
    if (step.contains("after")) {
      clock.advance(std::chrono::milliseconds(step.at("after").get<long long>()));
      chart.fire_due();
    }
    chart.send(trellis::ChartEvent(name));
    if (auto bad = compare("event " + std::to_string(i) + " '" + name + "'",
                           chart.atomic_configuration(), step.at("nextConfiguration"));
        !bad.empty())
      return bad;
    ++i;
  }
  return "";
}

// Runs a W3C test to its end; "" when the chart is done in the final state `pass`.
std::string run_w3c(trellis::StateChart<trellis::NoData>& chart, trellis::ManualChartClock& clock,
                    const json& expect) {
  for (const auto& step : expect.value("events", json::array())) {
    if (chart.done()) break;
    if (step.contains("after")) {
      clock.advance(std::chrono::milliseconds(step.at("after").get<long long>()));
      chart.fire_due();
    }
    chart.send(trellis::ChartEvent(step.at("event").at("name").get<std::string>()));
  }
  for (int round = 0; !chart.done(); ++round) {
    const auto due = chart.next_due();
    if (!due) break;
    if (round == kMaxTimerRounds)
      return "still running after " + std::to_string(kMaxTimerRounds) + " delayed sends";
    if (*due > clock.now()) clock.set(*due);
    chart.fire_due();
  }
  const auto got = as_set(chart.atomic_configuration());
  if (!chart.done()) return "not done; configuration " + show(got);
  if (got != std::set<std::string>{"pass"}) return "done in " + show(got) + ", not {pass}";
  return "";
}

// The loader's reason without the document's path (the table is the same on every machine):
// "line:column: <element>: reason", with the code when it is not "scxml.unsupported".
std::string loader_reason(const trellis::scxml::scxml_error& e) {
  std::string out;
  if (e.line() > 0) out += std::to_string(e.line()) + ":" + std::to_string(e.column()) + ": ";
  if (!e.element().empty()) out += "<" + e.element() + ">: ";
  out += e.reason();
  std::replace(out.begin(), out.end(), '\n', ' ');
  if (e.id() != "scxml.unsupported") out = std::string(e.id()) + ": " + out;
  return out;
}

Outcome run_document(const std::string& group, const fs::path& scxml, const fs::path& json_file);

// A document in kDifferent is excluded with the table's reason (and what trellis did); one that
// passes after all fails, so that the table cannot outlive the difference.
Outcome run_listed(const std::string& group, const fs::path& scxml, const fs::path& json_file) {
  Outcome out = run_document(group, scxml, json_file);
  const auto it = kDifferent.find(out.group + "/" + out.name);
  if (it == kDifferent.end()) return out;
  if (out.verdict == Verdict::pass) {
    out.verdict = Verdict::fail;
    out.reason = "passes, but the runner's table of deliberate differences lists it: remove it";
  } else {
    out.verdict = Verdict::excluded;
    out.reason = "deliberate difference: " + it->second + " (trellis: " + out.reason + ")";
  }
  return out;
}

Outcome run_document(const std::string& group, const fs::path& scxml, const fs::path& json_file) {
  // The W3C documents are named testNNN.txml.scxml (converted from the IRP's .txml).
  std::string name = scxml.stem().string();
  if (name.size() > 5 && name.ends_with(".txml")) name.resize(name.size() - 5);
  Outcome out{group, name, Verdict::pass, ""};
  json expect;
  try {
    std::ifstream in(json_file);
    expect = json::parse(in);
  } catch (const std::exception& e) {
    out.verdict = Verdict::fail;
    out.reason = "unreadable JSON: " + std::string(e.what());
    return out;
  }
  const std::string source = group + "/" + scxml.filename().string();
  trellis::scxml::LoadOptions options;
  options.allow_unused_ecmascript = true;
  options.source_name = source;
  // The suites test the algorithm, not the builder's lint: 23 documents have unreachable
  // states, some a parallel state with one region.
  options.build.allow_unreachable = true;  // (the loader's defaults today)
  options.build.allow_single_region = true;
  std::optional<trellis::Chart<trellis::NoData>> chart;
  try {
    chart.emplace(trellis::scxml::load_file(scxml.string(), trellis::scxml::Bindings<>{}, options));
  } catch (const trellis::scxml::scxml_error& e) {
    out.verdict = Verdict::excluded;
    out.reason = loader_reason(e);
    return out;
  } catch (const std::exception& e) {
    out.verdict = Verdict::fail;
    out.reason = "the loader threw something other than scxml_error: " + std::string(e.what());
    return out;
  }
  try {
    trellis::Context ctx;
    trellis::ManualChartClock clock;
    trellis::ChartOptions chart_options;
    chart_options.clock = &clock;
    trellis::StateChart<trellis::NoData> running(ctx, *chart, trellis::NoData{}, chart_options);
    out.reason =
        group == "w3c-ecma" ? run_w3c(running, clock, expect) : run_scion(running, clock, expect);
  } catch (const std::exception& e) {
    out.reason = "threw: " + std::string(e.what());
  }
  if (!out.reason.empty()) out.verdict = Verdict::fail;
  return out;
}

std::vector<Outcome> run_suite(const fs::path& test_dir) {
  std::vector<fs::path> groups;
  for (const auto& entry : fs::directory_iterator(test_dir))
    if (entry.is_directory()) groups.push_back(entry.path());
  std::sort(groups.begin(), groups.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
  std::vector<Outcome> outcomes;
  for (const auto& group : groups) {
    std::vector<fs::path> docs;
    for (const auto& entry : fs::directory_iterator(group)) {
      const fs::path& p = entry.path();
      if (p.extension() == ".scxml" && fs::exists(fs::path(p).replace_extension(".json")))
        docs.push_back(p);
    }
    std::sort(docs.begin(), docs.end(), [](const fs::path& a, const fs::path& b) {
      return natural_less(a.stem().string(), b.stem().string());
    });
    for (const auto& doc : docs)
      outcomes.push_back(
          run_listed(group.filename().string(), doc, fs::path(doc).replace_extension(".json")));
  }
  return outcomes;
}

struct Totals {
  int pass = 0;
  int fail = 0;
  int excluded = 0;
  void add(Verdict v) { ++(v == Verdict::pass ? pass : v == Verdict::fail ? fail : excluded); }
  int all() const { return pass + fail + excluded; }
};

std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

std::string row(const char* name, const Totals& t) {
  std::ostringstream s;
  s << "| " << name << " | " << t.all() << " | " << t.pass << " | " << t.fail << " | " << t.excluded
    << " |\n";
  return s.str();
}

// docs/scxml-conformance.md: the same text on every machine for the same results.
std::string render(const std::vector<Outcome>& outcomes) {
  std::map<std::string, Totals> per_group;
  std::vector<std::string> order;
  Totals scion;
  Totals w3c;
  for (const auto& o : outcomes) {
    if (!per_group.count(o.group)) order.push_back(o.group);
    per_group[o.group].add(o.verdict);
    (o.group == "w3c-ecma" ? w3c : scion).add(o.verdict);
  }
  Totals all = scion;
  all.pass += w3c.pass;
  all.fail += w3c.fail;
  all.excluded += w3c.excluded;

  std::ostringstream s;
  s << "# SCXML conformance\n\n"
    << "<!-- Generated by tests/scxml/conformance_test.cpp: do not edit. Regenerate with\n"
    << "     TRELLIS_UPDATE_CONFORMANCE=1 ctest --test-dir build/test -L conformance -->\n\n"
    << "trellis's statecharts and SCXML loader run against suites nobody in this project "
       "wrote: the\n"
    << "SCION test framework (npm `@scion-scxml/test-framework` 2.0.16, Apache-2.0) and the "
       "W3C SCXML\n"
    << "IRP tests converted in the same package (`test/w3c-ecma`). The ctest label "
       "`conformance` fetches\n"
    << "the package into the build directory with `npm pack` (SHA-512 pinned; "
       "`-DTRELLIS_SCION_TARBALL=<tgz>`\n"
    << "for offline builds; skipped, and reported as skipped, where npm is missing) and runs "
       "every document\n"
    << "that has a JSON file of expectations.\n\n"
    << "- SCION groups: the initial atomic configuration and, after each event of the JSON "
       "(`after`:\n"
    << "  a simulated clock moves that many milliseconds first), the atomic configuration, "
       "compared as\n"
    << "  sets. The `legacySemantics` answers some files carry (pre-2015 SCION) are ignored.\n"
    << "- W3C tests: the JSON's events, then delayed sends in due order until the chart is "
       "done; a test\n"
    << "  passes when the chart ends in the final state `pass`.\n"
    << "- The documents declare `datamodel=\"ecmascript\"`; they are loaded with "
       "`LoadOptions::allow_unused_ecmascript`,\n"
    << "  so a document that uses no script runs and any other is refused.\n"
    << "- **excluded**: the loader refuses the document with `scxml_error` (its message is "
       "the reason: a\n"
    << "  feature outside trellis's SCXML subset, see docs/statecharts.md), or a deliberate "
       "semantic\n"
    << "  difference (a hand table in the runner, each with its reason).\n\n"
    << "## Totals\n\n"
    << "| suite | documents | pass | fail | excluded |\n"
    << "| --- | ---: | ---: | ---: | ---: |\n"
    << row("SCION", scion) << row("W3C (w3c-ecma)", w3c) << row("all", all) << "\n"
    << "| group | documents | pass | fail | excluded |\n"
    << "| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& g : order) s << row(g.c_str(), per_group[g]);
  s << "\n## Every test\n";
  std::string current;
  for (const auto& o : outcomes) {
    if (o.group != current) {
      current = o.group;
      const Totals& t = per_group[current];
      s << "\n### " << current << " (" << t.pass << " of " << t.all() << " pass)\n\n"
        << "| test | result |\n| --- | --- |\n";
    }
    s << "| " << o.name << " | ";
    if (o.verdict == Verdict::pass)
      s << "pass";
    else if (o.verdict == Verdict::fail)
      s << "**fail**: " << cell(o.reason);
    else
      s << "excluded: " << cell(o.reason);
    s << " |\n";
  }
  return s.str();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("scxml conformance: the SCION and W3C suites pass where trellis supports the features") {
  const fs::path test_dir = suite_dir() / "test";
  if (!fs::is_directory(test_dir)) {
    // The fixture prints why (npm missing, registry unreachable); ctest's
    // SKIP_REGULAR_EXPRESSION turns this line into "Skipped".
    std::cout << "SKIPPED: the SCXML conformance suite is not in " << test_dir.string()
              << " (see the trellis_scion_fetch test)\n";
    return;
  }
  const auto outcomes = run_suite(test_dir);

  Totals scion;
  Totals w3c;
  for (const auto& o : outcomes) {
    (o.group == "w3c-ecma" ? w3c : scion).add(o.verdict);
    const char* verdict = o.verdict == Verdict::pass   ? "pass"
                          : o.verdict == Verdict::fail ? "FAIL"
                                                       : "excluded";
    std::cout << verdict << " " << o.group << "/" << o.name
              << (o.reason.empty() ? "" : ": " + o.reason) << "\n";
  }
  std::cout << "SCION: " << scion.pass << " pass, " << scion.fail << " fail, " << scion.excluded
            << " excluded\nW3C: " << w3c.pass << " pass, " << w3c.fail << " fail, " << w3c.excluded
            << " excluded\n";

  for (const auto& o : outcomes)
    if (o.verdict == Verdict::fail) FAIL_CHECK(o.group << "/" << o.name << ": " << o.reason);
  CHECK(scion.pass >= kScionFloor);
  CHECK(w3c.pass >= kW3cFloor);

  const std::string table = render(outcomes);
  const fs::path doc = doc_path();
  if (env_or("TRELLIS_UPDATE_CONFORMANCE", "") == "1") {
    std::ofstream(doc, std::ios::binary | std::ios::trunc) << table;
    std::cout << "wrote " << doc.string() << "\n";
  } else {
    const bool fresh = read_file(doc) == table;
    if (!fresh) {
      const fs::path fresh_copy = fs::current_path() / "scxml-conformance.md";
      std::ofstream(fresh_copy, std::ios::binary | std::ios::trunc) << table;
      FAIL_CHECK(doc.string() << " does not match these results (the new table is in "
                              << fresh_copy.string()
                              << "): rerun with TRELLIS_UPDATE_CONFORMANCE=1 and commit it");
    }
  }
}

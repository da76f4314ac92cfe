// SPDX-License-Identifier: MIT
// The JSON documents of `-o json` (documents.hpp), shared by the commands and the operator
// console's API.

#include "trellis/cli/documents.hpp"

#include <string>
#include <utility>
#include <variant>

#include "cli_support.hpp"
#include "trellis/agent/diagram.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/json/enumeration.hpp"

namespace trellis::agent::cli {

using detail::name;
using detail::utc;

nlohmann::json document(std::string_view kind) {
  return nlohmann::json{{"trellis_cli", schema_version}, {"kind", kind}};
}

nlohmann::json summary_json(const RunSummary& s) {
  return {{"run_id", s.run_id},
          {"status", name(s.status)},
          {"reason", name(s.reason)},
          {"node", s.node},
          {"step", s.step},
          {"seq", s.seq},
          {"created_at", s.created_at},
          {"updated_at", s.updated_at},
          {"fingerprint", s.fingerprint},
          {"request", s.request.empty() ? nlohmann::json() : nlohmann::json(s.request)},
          {"due", s.due.empty() ? nlohmann::json() : nlohmann::json(s.due)},
          {"priority", s.priority}};
}

namespace {

/// Appends `text` as a JSON string, as nlohmann's dump (error_handler_t::replace) writes it.
void append_json_string(std::string& out, std::string_view text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) >= 0x80 || static_cast<unsigned char>(c) < 0x20 || c == '"' ||
        c == '\\') {
      out += nlohmann::json(std::string(text))
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return;
    }
  out += '"';
  out += text;
  out += '"';
}

}  // namespace

void append_summary_json(std::string& out, const RunSummary& s) {
  // summary_json's members, in the order nlohmann prints them (sorted by name).
  out += R"({"created_at":)";
  append_json_string(out, s.created_at);
  out += R"(,"due":)";
  if (s.due.empty())
    out += "null";
  else
    append_json_string(out, s.due);
  out += R"(,"fingerprint":)";
  append_json_string(out, s.fingerprint);
  out += R"(,"node":)";
  append_json_string(out, s.node);
  out += R"(,"priority":)" + std::to_string(s.priority);
  out += R"(,"reason":)";
  append_json_string(out, name(s.reason));
  out += R"(,"request":)";
  if (s.request.empty())
    out += "null";
  else
    append_json_string(out, s.request);
  out += R"(,"run_id":)";
  append_json_string(out, s.run_id);
  out += R"(,"seq":)" + std::to_string(s.seq);
  out += R"(,"status":)";
  append_json_string(out, name(s.status));
  out += R"(,"step":)" + std::to_string(s.step);
  out += R"(,"updated_at":)";
  append_json_string(out, s.updated_at);
  out += '}';
}

nlohmann::json interrupt_json(const Interrupt& i, const std::string& id, const std::string& node) {
  nlohmann::json j = {{"id", id},
                      {"reason", i.reason},
                      {"asked_by", node},
                      {"then", i.then},
                      {"action", nullptr},
                      {"proposed_input", nullptr},
                      {"risk_reason", nullptr},
                      {"expires_at", nullptr}};
  if (i.approval) {
    j["action"] = i.approval->action;
    j["proposed_input"] = i.approval->proposed_input;
    j["risk_reason"] = i.approval->risk_reason;
    if (i.approval->expires_at) j["expires_at"] = utc(*i.approval->expires_at);
  }
  return j;
}

nlohmann::json request_json(const Checkpoint& cp) {
  if (cp.status != RunStatus::WaitingApproval) return nullptr;
  return interrupt_json(cp.interrupt.value_or(Interrupt{}), request_id(cp), cp.resume_node);
}

nlohmann::json checkpoint_json(const Checkpoint& cp) {
  nlohmann::json j = {{"seq", cp.seq},
                      {"status", name(cp.status)},
                      {"reason", name(cp.reason)},
                      {"detail", cp.detail},
                      {"node", cp.next_node},
                      {"step", cp.step},
                      {"attempt", cp.attempt},
                      {"created_at", cp.created_at},
                      {"state", cp.state},
                      {"effects", cp.effects},
                      {"request", request_json(cp)},
                      {"decision", nullptr},
                      {"reconciliation", nullptr}};
  if (cp.decision) {
    const Decision& d = *cp.decision;
    nlohmann::json given = std::visit(
        [](const auto& v) -> nlohmann::json {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, Approve>)
            return {{"kind", "approve"}, {"by", v.reviewer}, {"comment", v.comment}};
          else if constexpr (std::is_same_v<T, Reject>)
            return {{"kind", "reject"}, {"by", v.reviewer}, {"reason", v.reason}};
          else
            return {{"kind", "input"}, {"by", v.reviewer}, {"value", v.value}};
        },
        d.given);
    given["decided_at"] = d.decided_at;
    given["answers"] = std::to_string(d.answers);
    j["decision"] = std::move(given);
  }
  if (cp.reconciliation) j["reconciliation"] = *cp.reconciliation;
  if (cp.forked_from) j["forked_from"] = *cp.forked_from;
  return j;
}

std::string runs_document_text(const std::vector<RunSummary>& runs) {
  // Written a run at a time (100,000 runs in one nlohmann tree cost more than listing them),
  // the same bytes document("runs") with the summaries would dump.
  std::string out = R"({"kind":"runs","runs":[)";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i > 0) out += ',';
    append_summary_json(out, runs[i]);
  }
  out += "],\"trellis_cli\":" + std::to_string(schema_version) + "}";
  return out;
}

nlohmann::json state_changes(const nlohmann::json& a, const nlohmann::json& b) {
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& op : nlohmann::json::diff(a, b)) {
    const std::string path = op.at("path").get<std::string>();
    const nlohmann::json::json_pointer ptr(path);
    const std::string kind = op.at("op").get<std::string>();
    nlohmann::json old = kind == "add" ? nlohmann::json() : a.at(ptr);
    nlohmann::json now = kind == "remove" ? nlohmann::json() : op.at("value");
    out.push_back({{"op", kind}, {"path", path}, {"old", std::move(old)}, {"new", std::move(now)}});
  }
  return out;
}

nlohmann::json effect_json(const EffectRecord& r) {
  nlohmann::json j = {{"key", r.key},
                      {"name", r.name},
                      {"policy", std::string(enumeration<EffectPolicy>::name(r.policy))},
                      {"status", std::string(enumeration<EffectStatus>::name(r.status))},
                      {"issued", r.issued},
                      {"node", r.node},
                      {"step", r.step},
                      {"args", r.args},
                      {"result", r.result},
                      {"error", r.error},
                      {"compensates", r.compensates},
                      {"started_at", r.started_at},
                      {"finished_at", r.finished_at},
                      {"reconciliation", nullptr}};
  if (r.reconciliation) j["reconciliation"] = *r.reconciliation;
  if (!r.cached_from.empty()) j["cached_from"] = r.cached_from;  // a receipt from the cache
  return j;
}

namespace {

[[noreturn]] void no_run(std::string_view run) {
  throw unknown_run("trellis: no run '" + std::string(run) + "'");
}

}  // namespace

nlohmann::json run_document(Store& store, std::string_view run) {
  std::optional<Checkpoint> newest = store.latest(run);
  if (!newest) no_run(run);
  const Checkpoint& cp = *newest;
  std::optional<Checkpoint> first = cp.seq == 0 ? cp : store.checkpoint(run, 0);
  const RunSummary sum = summarize(cp, first ? first->created_at : cp.created_at);
  nlohmann::json doc = document("run");
  doc["run"] = summary_json(sum);
  doc["detail"] = cp.detail;
  doc["state"] = cp.state;
  doc["request"] = request_json(cp);
  const nlohmann::json whole = checkpoint_json(cp);
  doc["decision"] = whole["decision"];
  doc["reconciliation"] = whole["reconciliation"];
  doc["cancel_requests"] = nlohmann::json::array();
  for (const CancelRequest& c : store.cancel_requests(run, 0))
    doc["cancel_requests"].push_back({{"id", c.id},
                                      {"by", c.by},
                                      {"reason", c.reason},
                                      {"at", c.at},
                                      {"handled", c.id <= cp.cancel_handled}});
  return doc;
}

nlohmann::json history_document(Store& store, std::string_view run, bool with_changes) {
  const std::vector<Checkpoint> history = store.history(run);
  if (history.empty()) no_run(run);
  nlohmann::json doc = document("history");
  doc["run_id"] = run;
  doc["checkpoints"] = nlohmann::json::array();
  for (std::size_t i = 0; i < history.size(); ++i) {
    nlohmann::json j = checkpoint_json(history[i]);
    if (with_changes)
      j["changes"] = i == 0 ? state_changes(nlohmann::json::object(), history[i].state)
                            : state_changes(history[i - 1].state, history[i].state);
    doc["checkpoints"].push_back(std::move(j));
  }
  return doc;
}

nlohmann::json events_document(Store& store, std::string_view run, std::uint64_t after) {
  if (!store.latest(run)) no_run(run);
  nlohmann::json doc = document("events");
  doc["run_id"] = run;
  doc["events"] = nlohmann::json::array();
  for (const StoredEvent& e : store.events_after(run, after))
    doc["events"].push_back({{"seq", e.seq}, {"event", e.event}});
  return doc;
}

nlohmann::json effects_document(Store& store, std::string_view run) {
  if (!store.latest(run)) no_run(run);
  nlohmann::json doc = document("effects");
  doc["run_id"] = run;
  doc["effects"] = nlohmann::json::array();
  for (const EffectRecord& r : store.effects(run)) doc["effects"].push_back(effect_json(r));
  return doc;
}

nlohmann::json approvals_document(const std::vector<PendingApproval>& pending) {
  nlohmann::json doc = document("approvals");
  doc["approvals"] = nlohmann::json::array();
  for (const PendingApproval& p : pending) {
    nlohmann::json j = interrupt_json(p.interrupt, p.run.request, p.asked_by);
    j["run_id"] = p.run.run_id;
    j["waiting_since"] = p.run.updated_at;
    doc["approvals"].push_back(std::move(j));
  }
  return doc;
}

RunPicture draw_run(Store& store, std::string_view run, std::string_view format,
                    GraphRunner* graph) {
  const std::vector<Checkpoint> history = store.history(run);
  if (history.empty()) no_run(run);
  const RunPath path = run_path(history);
  const std::string& fingerprint = history.back().fingerprint;
  std::optional<GraphShape> shape = store.graph(fingerprint);
  if (!shape && graph && graph->fingerprint() == fingerprint) shape = graph->shape();
  const bool known = shape.has_value();
  if (!shape) {  // no shape: the path alone (its nodes are drawn as nodes the shape lacks)
    shape.emplace();
    shape->fingerprint = fingerprint;
    shape->entry = history.front().next_node;
  }
  std::string text = format == "mermaid" ? to_mermaid(*shape, &path) : to_dot(*shape, &path);
  if (format == "svg") text = detail::to_svg(text);
  return RunPicture{std::move(text), known};
}

}  // namespace trellis::agent::cli

// JSON forms of the operators' records and views: cancel requests, run summaries, graph
// shapes (what the stores persist and the `trellis` command prints with -o json).

#include <algorithm>

#include "trellis/agent/cancel_request.hpp"
#include "trellis/agent/clock.hpp"
#include "trellis/agent/errors.hpp"
#include "trellis/agent/graph_shape.hpp"
#include "trellis/agent/run_summary.hpp"

namespace trellis::agent {

void to_json(nlohmann::json& j, const CancelRequest& r) {
  j = {{"run_id", r.run_id}, {"id", r.id}, {"by", r.by}, {"reason", r.reason}, {"at", r.at}};
}

void from_json(const nlohmann::json& j, CancelRequest& r) {
  try {
    j.at("run_id").get_to(r.run_id);
    j.at("id").get_to(r.id);
    j.at("by").get_to(r.by);
    j.at("reason").get_to(r.reason);
    j.at("at").get_to(r.at);
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: a cancel request does not decode: ") + e.what());
  }
}

RunSummary summarize(const Checkpoint& newest, std::string created_at) {
  RunSummary s;
  s.run_id = newest.run_id;
  s.status = newest.status;
  s.reason = newest.reason;
  s.node = newest.next_node;
  s.step = newest.step;
  s.seq = newest.seq;
  s.created_at = std::move(created_at);
  s.updated_at = newest.created_at;
  s.fingerprint = newest.fingerprint;
  s.request = request_id(newest);
  s.due = due_at(newest).value_or(std::string());
  s.priority = newest.priority;
  return s;
}

std::optional<std::string> due_at(const Checkpoint& cp) {
  switch (cp.status) {
    case RunStatus::Queued:
      return cp.wake_at.empty() ? cp.created_at : cp.wake_at;
    case RunStatus::Running:
      // Claimable as soon as its lease is free, whatever the clock of the worker that wrote it
      // (a worker whose clock runs ahead must not delay the recovery of its runs): the earliest
      // time there is, so crashed runs are recovered first.
      return std::string(kDueAtOnce);
    case RunStatus::Waiting:
      return cp.wake_at.empty() ? cp.created_at : cp.wake_at;
    case RunStatus::WaitingApproval:
      if (cp.interrupt && cp.interrupt->approval && cp.interrupt->approval->expires_at)
        return detail::format_time(*cp.interrupt->approval->expires_at);
      return std::nullopt;
    case RunStatus::Succeeded:
    case RunStatus::Failed:
    case RunStatus::Cancelled:
      return std::nullopt;
  }
  return std::nullopt;
}

bool RunFilter::matches(const RunSummary& s) const {
  if (status && s.status != *status) return false;
  if (!since.empty() && s.updated_at < since) return false;  // fixed-width UTC: text order
  if (!node.empty() && s.node != node) return false;
  if (!graph.empty() && s.fingerprint.compare(0, graph.size(), graph) != 0) return false;
  if (!after.empty() && s.run_id <= after) return false;
  return true;
}

void to_json(nlohmann::json& j, const RunSummary& s) {
  j = {{"run_id", s.run_id},
       {"status", s.status},
       {"reason", s.reason},
       {"node", s.node},
       {"step", s.step},
       {"seq", s.seq},
       {"created_at", s.created_at},
       {"updated_at", s.updated_at},
       {"fingerprint", s.fingerprint},
       {"request", s.request}};
  if (!s.due.empty()) j["due"] = s.due;
  if (s.priority != 0) j["priority"] = s.priority;
}

void from_json(const nlohmann::json& j, RunSummary& s) {
  try {
    j.at("run_id").get_to(s.run_id);
    j.at("status").get_to(s.status);
    j.at("reason").get_to(s.reason);
    j.at("node").get_to(s.node);
    j.at("step").get_to(s.step);
    j.at("seq").get_to(s.seq);
    j.at("created_at").get_to(s.created_at);
    j.at("updated_at").get_to(s.updated_at);
    j.at("fingerprint").get_to(s.fingerprint);
    j.at("request").get_to(s.request);
    s.due = j.value("due", std::string());  // absent when none, and before timers existed
    s.priority = j.value("priority", 0);
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: a run summary does not decode: ") + e.what());
  }
}

const NodeShape* GraphShape::node(std::string_view name) const {
  const auto it =
      std::find_if(nodes.begin(), nodes.end(), [&](const NodeShape& n) { return n.name == name; });
  return it == nodes.end() ? nullptr : &*it;
}

void to_json(nlohmann::json& j, const NodeShape& n) {
  j = {{"name", n.name},
       {"successors", n.successors},
       {"declared", n.declared},
       {"approval", n.approval},
       {"effects", n.effects}};
}

void from_json(const nlohmann::json& j, NodeShape& n) {
  j.at("name").get_to(n.name);
  j.at("successors").get_to(n.successors);
  j.at("declared").get_to(n.declared);
  j.at("approval").get_to(n.approval);
  j.at("effects").get_to(n.effects);
}

void to_json(nlohmann::json& j, const GraphShape& g) {
  j = {{"fingerprint", g.fingerprint}, {"entry", g.entry}, {"nodes", g.nodes}};
}

void from_json(const nlohmann::json& j, GraphShape& g) {
  try {
    j.at("fingerprint").get_to(g.fingerprint);
    j.at("entry").get_to(g.entry);
    j.at("nodes").get_to(g.nodes);
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: a graph shape does not decode: ") + e.what());
  }
}

}  // namespace trellis::agent

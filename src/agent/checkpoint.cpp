// JSON forms of checkpoints and interrupts (what every store persists).

#include "trellis/agent/checkpoint.hpp"

#include <chrono>

#include "trellis/agent/errors.hpp"

namespace trellis::agent {

namespace {

std::int64_t to_millis(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::chrono::system_clock::time_point from_millis(std::int64_t ms) {
  return std::chrono::system_clock::time_point(std::chrono::milliseconds(ms));
}

}  // namespace

void to_json(nlohmann::json& j, const ApprovalRequest& a) {
  j = {{"action", a.action}, {"proposed_input", a.proposed_input}, {"risk_reason", a.risk_reason}};
  j["expires_at_ms"] = a.expires_at ? nlohmann::json(to_millis(*a.expires_at)) : nlohmann::json();
}

void from_json(const nlohmann::json& j, ApprovalRequest& a) {
  j.at("action").get_to(a.action);
  a.proposed_input = j.at("proposed_input");
  j.at("risk_reason").get_to(a.risk_reason);
  const nlohmann::json& e = j.at("expires_at_ms");
  a.expires_at = e.is_null() ? std::nullopt : std::optional(from_millis(e.get<std::int64_t>()));
}

void to_json(nlohmann::json& j, const Interrupt& i) {
  j = {{"reason", i.reason}, {"then", i.then}};
  j["approval"] = i.approval ? nlohmann::json(*i.approval) : nlohmann::json();
}

void from_json(const nlohmann::json& j, Interrupt& i) {
  j.at("reason").get_to(i.reason);
  j.at("then").get_to(i.then);
  const nlohmann::json& a = j.at("approval");
  i.approval.reset();
  if (!a.is_null()) from_json(a, i.approval.emplace());
}

// {"kind": "approve", "reviewer": ..., "comment": ...}, {"kind": "reject", "reviewer": ...,
// "reason": ...} or {"kind": "input", "reviewer": ..., "value": ...}, with when and what it
// answers.
void to_json(nlohmann::json& j, const Decision& d) {
  if (const auto* a = std::get_if<Approve>(&d.given)) {
    j = {{"kind", "approve"}, {"reviewer", a->reviewer}, {"comment", a->comment}};
  } else if (const auto* r = std::get_if<Reject>(&d.given)) {
    j = {{"kind", "reject"}, {"reviewer", r->reviewer}, {"reason", r->reason}};
  } else {
    const auto& i = std::get<Input>(d.given);
    j = {{"kind", "input"}, {"reviewer", i.reviewer}, {"value", i.value}};
  }
  j["decided_at"] = d.decided_at;
  j["answers"] = d.answers;
  j["request"] = d.request;
}

void from_json(const nlohmann::json& j, Decision& d) {
  const std::string kind = j.at("kind").get<std::string>();
  if (kind == "approve") {
    d.given = Approve{j.at("reviewer").get<std::string>(), j.at("comment").get<std::string>()};
  } else if (kind == "reject") {
    d.given = Reject{j.at("reason").get<std::string>(), j.at("reviewer").get<std::string>()};
  } else if (kind == "input") {
    d.given = Input{j.at("value"), j.at("reviewer").get<std::string>()};
  } else {
    throw store_error("trellis: a checkpoint record does not decode: unknown decision kind '" +
                      kind + "'");
  }
  j.at("decided_at").get_to(d.decided_at);
  j.at("answers").get_to(d.answers);
  from_json(j.at("request"), d.request);
}

std::string request_id(const Checkpoint& cp) {
  return cp.status == RunStatus::WaitingApproval ? std::to_string(cp.seq) : std::string();
}

void to_json(nlohmann::json& j, const Reconciliation& r) {
  j = {{"key", r.key}, {"happened", r.happened}, {"result", r.result},
       {"by", r.by},   {"reason", r.reason},     {"at", r.at}};
}

void to_json(nlohmann::json& j, const ForkOrigin& f) {
  j = {{"run_id", f.run_id}, {"seq", f.seq}, {"by", f.by}, {"reason", f.reason}, {"at", f.at}};
}

void from_json(const nlohmann::json& j, ForkOrigin& f) {
  j.at("run_id").get_to(f.run_id);
  j.at("seq").get_to(f.seq);
  j.at("by").get_to(f.by);
  j.at("reason").get_to(f.reason);
  j.at("at").get_to(f.at);
}

void from_json(const nlohmann::json& j, Reconciliation& r) {
  j.at("key").get_to(r.key);
  j.at("happened").get_to(r.happened);
  r.result = j.at("result");
  j.at("by").get_to(r.by);
  j.at("reason").get_to(r.reason);
  j.at("at").get_to(r.at);
}

void to_json(nlohmann::json& j, const Checkpoint& c) {
  j = {{"run_id", c.run_id},
       {"seq", c.seq},
       {"status", c.status},
       {"next_node", c.next_node},
       {"step", c.step},
       {"attempt", c.attempt},
       {"state", c.state},
       {"schema", c.schema},
       {"fingerprint", c.fingerprint},
       {"resume_node", c.resume_node},
       {"reason", c.reason},
       {"detail", c.detail},
       {"created_at", c.created_at}};
  j["interrupt"] = c.interrupt ? nlohmann::json(*c.interrupt) : nlohmann::json();
  if (!c.effects.empty()) j["effects"] = c.effects;
  if (c.rerun_step) j["rerun_step"] = *c.rerun_step;
  if (c.decision) j["decision"] = *c.decision;
  if (c.cancel_handled != 0) j["cancel_handled"] = c.cancel_handled;
  if (c.reconciliation) j["reconciliation"] = *c.reconciliation;
  if (c.forked_from) j["forked_from"] = *c.forked_from;
  if (!c.wake_at.empty()) j["wake_at"] = c.wake_at;
  if (c.priority != 0) j["priority"] = c.priority;
  if (!c.receipts.empty()) j["receipts"] = c.receipts;
  if (!c.prev_hash.empty()) j["prev_hash"] = c.prev_hash;
  if (!c.hash.empty()) j["hash"] = c.hash;
}

void from_json(const nlohmann::json& j, Checkpoint& c) {
  try {
    j.at("run_id").get_to(c.run_id);
    j.at("seq").get_to(c.seq);
    j.at("status").get_to(c.status);
    j.at("next_node").get_to(c.next_node);
    j.at("step").get_to(c.step);
    j.at("attempt").get_to(c.attempt);
    c.state = j.at("state");
    j.at("schema").get_to(c.schema);
    j.at("fingerprint").get_to(c.fingerprint);
    j.at("resume_node").get_to(c.resume_node);
    j.at("reason").get_to(c.reason);
    j.at("detail").get_to(c.detail);
    j.at("created_at").get_to(c.created_at);
    const nlohmann::json& i = j.at("interrupt");
    c.interrupt.reset();
    if (!i.is_null()) from_json(i, c.interrupt.emplace());
    c.effects.clear();  // absent in records written before effects existed, and when empty
    if (auto e = j.find("effects"); e != j.end()) e->get_to(c.effects);
    c.rerun_step.reset();
    if (auto r = j.find("rerun_step"); r != j.end()) c.rerun_step = r->get<std::uint64_t>();
    c.decision.reset();  // absent in records written before decisions were stored, and when none
    if (auto d = j.find("decision"); d != j.end()) from_json(*d, c.decision.emplace());
    c.cancel_handled = 0;  // absent before cancel requests existed (version 2), and when none
    if (auto h = j.find("cancel_handled"); h != j.end()) h->get_to(c.cancel_handled);
    c.reconciliation.reset();
    if (auto r = j.find("reconciliation"); r != j.end()) from_json(*r, c.reconciliation.emplace());
    c.forked_from.reset();  // absent before forks were recorded, and when not a fork's first
    if (auto f = j.find("forked_from"); f != j.end()) from_json(*f, c.forked_from.emplace());
    c.wake_at.clear();  // absent before timers existed, and when none
    if (auto w = j.find("wake_at"); w != j.end()) w->get_to(c.wake_at);
    c.priority = 0;
    if (auto p = j.find("priority"); p != j.end()) p->get_to(c.priority);
    c.receipts.clear();  // the hash chain: absent before it existed, and while unsealed
    if (auto r = j.find("receipts"); r != j.end()) r->get_to(c.receipts);
    c.prev_hash.clear();
    if (auto h = j.find("prev_hash"); h != j.end()) h->get_to(c.prev_hash);
    c.hash.clear();
    if (auto h = j.find("hash"); h != j.end()) h->get_to(c.hash);
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: a checkpoint record does not decode: ") + e.what());
  }
}

}  // namespace trellis::agent

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
  } catch (const nlohmann::json::exception& e) {
    throw store_error(std::string("trellis: a checkpoint record does not decode: ") + e.what());
  }
}

}  // namespace trellis::agent

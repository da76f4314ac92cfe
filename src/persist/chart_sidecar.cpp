// The state member of a durable chart's sidecar (see chart_sidecar.hpp and docs/formats.md).

#include "trellis/persist/detail/chart_sidecar.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "trellis/base/error.hpp"
#include "trellis/persist/errors.hpp"

namespace trellis::detail {

namespace {

using reason = recovery_error::reason;

std::string quoted(const std::string& id) { return nlohmann::json(id).dump(); }

class Decoder {
 public:
  Decoder(const ChartDefinition& def, const std::filesystem::path& file) : def_(def), file_(file) {}

  [[noreturn]] void refuse(reason why, const std::string& detail) const {
    throw recovery_error(file_, why, detail);
  }

  const nlohmann::json& member(const nlohmann::json& object, const char* key,
                               nlohmann::json::value_t type, const std::string& where) const {
    const auto it = object.find(key);
    if (it == object.end()) refuse(reason::bad_state, where + " has no \"" + key + "\" member");
    // number_integer: any integer (JSON text reads a non-negative one as unsigned).
    const bool ok = type == nlohmann::json::value_t::number_integer ? it->is_number_integer()
                                                                    : it->type() == type;
    if (!ok)
      refuse(reason::bad_state,
             where + ": \"" + key + "\" is " + it->dump() + ", expected " + expected(type));
    return *it;
  }

  /// The index of state `id`, named `what` in the message; unknown_state when there is none.
  int state(const nlohmann::json& id, const std::string& what) const {
    if (!id.is_string())
      refuse(reason::bad_state, what + " is " + id.dump() + ", expected a state id (a string)");
    const int s = def_.find(id.get_ref<const std::string&>());
    if (s < 0)
      refuse(reason::unknown_state, what + " " + id.dump() + " is not a state of chart " +
                                        quoted(def_.name) +
                                        " (a chart changed since the file was written needs a "
                                        "migration)");
    return s;
  }

  const std::string& id(int s) const { return def_.state(s).id; }

  static const char* expected(nlohmann::json::value_t type) {
    switch (type) {
      case nlohmann::json::value_t::array:
        return "an array";
      case nlohmann::json::value_t::object:
        return "an object";
      case nlohmann::json::value_t::string:
        return "a string";
      case nlohmann::json::value_t::number_unsigned:
        return "an unsigned integer";
      default:
        return "an integer";
    }
  }

 private:
  const ChartDefinition& def_;
  const std::filesystem::path& file_;
};

void check_configuration(const ChartDefinition& def, const StateSet& config, const Decoder& d) {
  for (int s = config.next(-1); s >= 0; s = config.next(s)) {
    const ChartState& st = def.state(s);
    if (s != 0 && !config.contains(st.parent))
      d.refuse(reason::bad_state, "the configuration holds " + quoted(st.id) +
                                      " but not its parent " + quoted(d.id(st.parent)));
    if (st.is_compound()) {
      const auto active = std::count_if(st.children.begin(), st.children.end(),
                                        [&](int c) { return config.contains(c); });
      if (active != 1)
        d.refuse(reason::bad_state,
                 "the configuration holds " + std::to_string(active) + " children of " +
                     (s == 0 ? std::string("the chart's root") : quoted(st.id)) + ", not one");
    } else if (st.kind == StateKind::parallel) {
      for (int c : st.children)
        if (!config.contains(c))
          d.refuse(reason::bad_state, "the configuration holds the parallel state " +
                                          quoted(st.id) + " but not its region " + quoted(d.id(c)));
    }
  }
}

}  // namespace

nlohmann::json encode_chart_state(const ChartInstance& inst, nlohmann::json data,
                                  const std::filesystem::path& file) {
  const ChartDefinition& def = inst.definition();
  nlohmann::json configuration = nlohmann::json::array();
  const StateSet& config = inst.configuration();
  for (int s = config.next(0); s >= 0; s = config.next(s)) configuration.push_back(def.state(s).id);

  nlohmann::json history = nlohmann::json::object();
  const std::vector<bool> recorded = inst.history_recorded();
  for (std::size_t h = 0; h < recorded.size(); ++h) {
    if (!recorded[h]) continue;
    nlohmann::json value = nlohmann::json::array();
    for (int s : inst.history_values()[h]) value.push_back(def.state(s).id);
    history[def.state(static_cast<int>(h)).id] = std::move(value);
  }

  nlohmann::json sends = nlohmann::json::array();
  const std::vector<DelayedSend>& pending = inst.pending_sends();
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const DelayedSend& d = pending[i];
    if (d.event.data.has_value())
      throw unwritable_value("sidecar '" + file.string() + "'",
                             "/state/sends/" + std::to_string(i) + "/event",
                             "is the delayed send of event " + quoted(d.event.name) +
                                 " with a payload (std::any), which a sidecar cannot hold");
    const auto due =
        std::chrono::duration_cast<std::chrono::nanoseconds>(d.due.time_since_epoch()).count();
    sends.push_back({{"event", d.event.name},
                     {"due_ns", static_cast<std::int64_t>(due)},
                     {"seq", d.seq},
                     {"id", d.id}});
  }
  return {{"configuration", std::move(configuration)},
          {"history", std::move(history)},
          {"data", std::move(data)},
          {"sends", std::move(sends)}};
}

ChartSnapshot decode_chart_state(const ChartDefinition& def, const nlohmann::json& state,
                                 const std::filesystem::path& file, nlohmann::json& data) {
  using type = nlohmann::json::value_t;
  const Decoder d(def, file);
  if (!state.is_object())
    d.refuse(reason::bad_state,
             "the chart's state is " + std::string(state.type_name()) + ", expected an object");
  const std::size_t n = def.states.size();
  ChartSnapshot out;
  out.configuration.resize(n);
  out.configuration.insert(0);
  out.history.resize(n);
  out.recorded.assign(n, false);

  for (const nlohmann::json& id :
       d.member(state, "configuration", type::array, "the chart's state")) {
    const int s = d.state(id, "the configuration's state");
    if (def.state(s).is_history())
      d.refuse(reason::bad_state, "the configuration holds the history state " + id.dump());
    out.configuration.insert(s);
  }
  check_configuration(def, out.configuration, d);
  for (int s = out.configuration.next(0); s >= 0; s = out.configuration.next(s)) {
    const ChartState& st = def.state(s);
    if (st.kind == StateKind::final_state && st.parent == 0) out.running = false;
  }

  for (const auto& [key, value] :
       d.member(state, "history", type::object, "the chart's state").items()) {
    const int h = d.state(nlohmann::json(key), "the history state");
    const ChartState& hs = def.state(h);
    if (!hs.is_history())
      d.refuse(reason::bad_state, "the history values name " + quoted(key) + ", which is a " +
                                      std::string(to_string(hs.kind)) +
                                      " state, not a history state");
    if (!value.is_array())
      d.refuse(reason::bad_state, "the history value of " + quoted(key) + " is " + value.dump() +
                                      ", expected an array of state ids");
    const bool deep = hs.kind == StateKind::deep_history;
    std::vector<int>& out_value = out.history[static_cast<std::size_t>(h)];
    for (const nlohmann::json& id : value) {
      const int s = d.state(id, "the history value of " + quoted(key) + " names state");
      const ChartState& st = def.state(s);
      if (deep ? !(st.is_atomic() && def.is_descendant(s, hs.parent)) : st.parent != hs.parent)
        d.refuse(reason::bad_state, "the history value of " + quoted(key) + " names " + id.dump() +
                                        ", which is not " +
                                        (deep ? "an atomic descendant" : "a child") + " of " +
                                        quoted(d.id(hs.parent)));
      out_value.push_back(s);
    }
    std::sort(out_value.begin(), out_value.end());
    out_value.erase(std::unique(out_value.begin(), out_value.end()), out_value.end());
    out.recorded[static_cast<std::size_t>(h)] = true;
  }

  const nlohmann::json& sends = d.member(state, "sends", type::array, "the chart's state");
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const std::string where = "the delayed send /state/sends/" + std::to_string(i);
    const nlohmann::json& s = sends[i];
    if (!s.is_object()) d.refuse(reason::bad_state, where + " is not an object");
    DelayedSend send;
    send.event = ChartEvent(d.member(s, "event", type::string, where).get<std::string>());
    const nlohmann::json& due = d.member(s, "due_ns", type::number_integer, where);
    if (due.is_number_unsigned() && due.get<std::uint64_t>() > INT64_MAX)
      d.refuse(reason::bad_state, where + ": \"due_ns\" is " + due.dump() + ", past 2^63-1");
    const auto ns = std::chrono::nanoseconds(due.get<std::int64_t>());
    send.due =
        ChartClock::time_point(std::chrono::duration_cast<ChartClock::time_point::duration>(ns));
    send.seq = d.member(s, "seq", type::number_unsigned, where).get<std::uint64_t>();
    send.id = d.member(s, "id", type::string, where).get<std::string>();
    out.sends.push_back(std::move(send));
  }

  const auto it = state.find("data");
  if (it == state.end()) d.refuse(reason::bad_state, "the chart's state has no \"data\" member");
  data = *it;
  return out;
}

ChartSnapshot snapshot_of(const ChartInstance& inst) {
  return ChartSnapshot{inst.configuration(), inst.history_values(), inst.history_recorded(),
                       inst.pending_sends(), inst.running()};
}

}  // namespace trellis::detail

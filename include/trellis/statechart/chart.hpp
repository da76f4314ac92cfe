#pragma once
/// @file
/// `Chart<D>`: a built statechart whose guards and actions see data of type `D` (a plain C++
/// struct, SCXML's null datamodel plus typed data). Immutable and cheap to copy (it shares
/// its ChartDefinition); several running charts may share one.

#include <memory>
#include <string>
#include <typeinfo>
#include <utility>

#include "trellis/statechart/definition.hpp"
#include "trellis/statechart/errors.hpp"

namespace trellis {

/// The data of a chart that has none (the null datamodel).
struct NoData {
  friend bool operator==(const NoData&, const NoData&) = default;
};

template <class D = NoData>
class Chart {
 public:
  using data_type = D;

  /// Wraps a compiled definition; chart_error when its guards and actions were written for
  /// another data type.
  explicit Chart(std::shared_ptr<const ChartDefinition> def) : def_(std::move(def)) {
    if (!def_) throw chart_error("trellis: a Chart needs a definition");
    if (def_->data_type != nullptr && *def_->data_type != typeid(D))
      throw chart_error("trellis: chart '" + def_->name + "' was built for data of type " +
                        def_->data_type->name() + ", not " + typeid(D).name());
  }

  const ChartDefinition& definition() const noexcept { return *def_; }
  const std::shared_ptr<const ChartDefinition>& shared_definition() const noexcept { return def_; }
  const std::string& name() const noexcept { return def_->name; }

 private:
  std::shared_ptr<const ChartDefinition> def_;
};

}  // namespace trellis

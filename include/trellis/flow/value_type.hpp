#pragma once
/// @file
/// `Type`: what the loader knows of a value before a run, to type-check conditions and templates
/// when a graph file loads. Known types come from the `inputs` schema, the initial `state` and
/// each action's declared result schema; anything else is `any`, checked when the run evaluates
/// it (expression.hpp).

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "trellis/base/enumeration.hpp"

namespace trellis::flow {

enum class TypeKind { any, null, boolean, number, string, list, object };
TRELLIS_ENUM(TypeKind, any, null, boolean, number, string, list, object);

struct Type {
  TypeKind kind = TypeKind::any;
  /// For an object: the members known (a member not listed is `any`; with `closed`, a member
  /// not listed is a type error: used for the scope's roots).
  std::map<std::string, Type, std::less<>> fields;
  bool closed = false;
  /// For a list: its elements' type (nullptr: any).
  std::shared_ptr<const Type> element;

  static Type any() { return {}; }
  static Type of_kind(TypeKind k) {
    Type t;
    t.kind = k;
    return t;
  }
  /// The type of a value: its kind, an object's members (each by its value), a list's element
  /// type when all its elements have the same kind (else any; for objects, the members they
  /// all have, each typed the same way). Values nested deeper than 64 levels are any.
  static Type of(const nlohmann::json& value);
  /// From a JSON Schema subset: "type" (one of null, boolean, number, integer (a number),
  /// string, array, object; a list of types is any), "properties" and "items". Anything
  /// else is ignored (any; a schema without "type" too). `schema` not an object: any. Schemas
  /// nested deeper than 64 levels are any.
  static Type from_schema(const nlohmann::json& schema);

  /// The type of member `name` (object: its field, or any unless closed, which gives nullptr;
  /// any: any; another kind: nullptr, a type error).
  const Type* member(std::string_view name) const;

  friend bool operator==(const Type& a, const Type& b);
};

/// "number", "list of string", "object" ...: for messages.
std::string to_string(const Type& t);

/// "a number", "a list", "an object", "any value" ...: a kind with its article, for messages.
std::string a_kind(TypeKind kind);
/// The kind of `value` the same way ("a number", "a string", "null", ...).
std::string a_kind(const nlohmann::json& value);

}  // namespace trellis::flow

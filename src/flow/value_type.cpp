// SPDX-License-Identifier: MIT
#include "trellis/flow/value_type.hpp"

#include <utility>

#include "expression_detail.hpp"

namespace trellis::flow {

namespace {

using detail::join;

// Values and schemas nested deeper than this are typed `any` (a value read from a run can be
// nested arbitrarily deep; typing it must not exhaust the stack).
constexpr int max_type_depth = 64;

const Type& any_type() {
  static const Type any;
  return any;
}

bool is_any(const Type* t) { return t == nullptr || *t == any_type(); }

Type of_value(const nlohmann::json& value, int depth) {
  if (depth > max_type_depth) return Type::any();
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return Type::of_kind(TypeKind::null);
    case nlohmann::json::value_t::boolean:
      return Type::of_kind(TypeKind::boolean);
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return Type::of_kind(TypeKind::number);
    case nlohmann::json::value_t::string:
      return Type::of_kind(TypeKind::string);
    case nlohmann::json::value_t::array: {
      Type t = Type::of_kind(TypeKind::list);
      if (value.empty()) return t;
      Type element = of_value(value.front(), depth + 1);
      for (std::size_t i = 1; i < value.size() && !(element == any_type()); ++i) {
        element = join(element, of_value(value[i], depth + 1));
      }
      if (!(element == any_type())) t.element = std::make_shared<const Type>(std::move(element));
      return t;
    }
    case nlohmann::json::value_t::object: {
      Type t = Type::of_kind(TypeKind::object);
      for (const auto& [name, member] : value.items()) {
        t.fields.emplace(name, of_value(member, depth + 1));
      }
      return t;
    }
    default:
      return Type::any();  // binary, discarded
  }
}

Type from_schema_at(const nlohmann::json& schema, int depth) {
  if (depth > max_type_depth || !schema.is_object()) return Type::any();
  const auto type = schema.find("type");
  if (type == schema.end() || !type->is_string()) return Type::any();
  const auto& name = type->get_ref<const std::string&>();
  if (name == "null") return Type::of_kind(TypeKind::null);
  if (name == "boolean") return Type::of_kind(TypeKind::boolean);
  if (name == "number" || name == "integer") return Type::of_kind(TypeKind::number);
  if (name == "string") return Type::of_kind(TypeKind::string);
  if (name == "array") {
    Type t = Type::of_kind(TypeKind::list);
    const auto items = schema.find("items");
    if (items != schema.end()) {
      auto element = from_schema_at(*items, depth + 1);
      if (!(element == any_type())) t.element = std::make_shared<const Type>(std::move(element));
    }
    return t;
  }
  if (name == "object") {
    Type t = Type::of_kind(TypeKind::object);
    const auto properties = schema.find("properties");
    if (properties != schema.end() && properties->is_object()) {
      for (const auto& [member, member_schema] : properties->items()) {
        t.fields.emplace(member, from_schema_at(member_schema, depth + 1));
      }
    }
    return t;
  }
  return Type::any();
}

}  // namespace

Type detail::join(const Type& a, const Type& b) {
  if (a == b) return a;
  if (a.kind != b.kind) return Type::any();
  Type t = Type::of_kind(a.kind);
  if (a.kind == TypeKind::object) {
    for (const auto& [name, field] : a.fields) {
      const auto other = b.fields.find(name);
      if (other != b.fields.end()) t.fields.emplace(name, join(field, other->second));
    }
  } else if (a.kind == TypeKind::list && a.element && b.element) {
    auto element = join(*a.element, *b.element);
    if (!(element == any_type())) t.element = std::make_shared<const Type>(std::move(element));
  }
  return t;
}

Type Type::of(const nlohmann::json& value) { return of_value(value, 0); }

Type Type::from_schema(const nlohmann::json& schema) { return from_schema_at(schema, 0); }

const Type* Type::member(std::string_view name) const {
  if (kind == TypeKind::any) return &any_type();
  if (kind != TypeKind::object) return nullptr;
  const auto field = fields.find(name);
  if (field != fields.end()) return &field->second;
  return closed ? nullptr : &any_type();
}

bool operator==(const Type& a, const Type& b) {
  if (a.kind != b.kind || a.closed != b.closed || a.fields != b.fields) return false;
  if (a.element == b.element) return true;
  if (is_any(a.element.get()) && is_any(b.element.get())) return true;
  return a.element && b.element && *a.element == *b.element;
}

std::string to_string(const Type& t) {
  std::string text(enumeration<TypeKind>::name(t.kind));
  if (t.kind == TypeKind::list && !is_any(t.element.get())) text += " of " + to_string(*t.element);
  return text;
}

std::string a_kind(TypeKind kind) {
  switch (kind) {
    case TypeKind::any:
      return "any value";
    case TypeKind::null:
      return "null";
    case TypeKind::boolean:
      return "a boolean";
    case TypeKind::number:
      return "a number";
    case TypeKind::string:
      return "a string";
    case TypeKind::list:
      return "a list";
    case TypeKind::object:
      return "an object";
  }
  return "a value";
}

std::string a_kind(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "a number";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::array:
      return "a list";
    case nlohmann::json::value_t::object:
      return "an object";
    default:
      return "a value";
  }
}

}  // namespace trellis::flow

// SPDX-License-Identifier: MIT
// `Type` (value_type.hpp): the type of a value, of a JSON Schema, members, equality and names.

#include <trellis/flow/value_type.hpp>

#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace fl = trellis::flow;
using json = nlohmann::json;
using fl::Type;
using fl::TypeKind;

TEST_CASE("type: of gives each scalar's kind") {
  CHECK(Type::of(json(nullptr)) == Type::of_kind(TypeKind::null));
  CHECK(Type::of(json(true)) == Type::of_kind(TypeKind::boolean));
  CHECK(Type::of(json(1)) == Type::of_kind(TypeKind::number));
  CHECK(Type::of(json(1u)) == Type::of_kind(TypeKind::number));
  CHECK(Type::of(json(1.5)) == Type::of_kind(TypeKind::number));
  CHECK(Type::of(json("s")) == Type::of_kind(TypeKind::string));
}

TEST_CASE("type: of gives an object's members by their values") {
  const auto t = Type::of(json{{"a", 1}, {"b", {{"c", "x"}}}});
  REQUIRE(t.kind == TypeKind::object);
  CHECK_FALSE(t.closed);
  CHECK(t.fields.at("a") == Type::of_kind(TypeKind::number));
  CHECK(t.fields.at("b").fields.at("c") == Type::of_kind(TypeKind::string));
}

TEST_CASE("type: of gives a list's element type when all elements have the same kind") {
  CHECK(to_string(Type::of(json{1, 2.5, 3})) == "list of number");
  CHECK(to_string(Type::of(json{1, "a"})) == "list");
  CHECK(Type::of(json{1, "a"}).element == nullptr);
  CHECK(to_string(Type::of(json::array())) == "list");
  CHECK(to_string(Type::of(json{json{1}, json{2}})) == "list of list of number");
}

TEST_CASE("type: a list of objects has the members all its elements share") {
  const auto t = Type::of(json::parse(R"([{"a": 1, "b": "x"}, {"a": 2, "c": true}])"));
  REQUIRE(t.element);
  CHECK(t.element->fields.size() == 1);
  CHECK(t.element->fields.at("a") == Type::of_kind(TypeKind::number));
  CHECK(*t.element->member("b") == Type::any());
}

TEST_CASE("type: a list of objects whose shared member differs in kind types it any") {
  const auto t = Type::of(json::parse(R"([{"a": 1}, {"a": "x"}])"));
  REQUIRE(t.element);
  CHECK(t.element->fields.at("a") == Type::any());
}

TEST_CASE("type: of a value nested very deeply is any below the limit, not a stack overflow") {
  json deep = 1;
  for (int i = 0; i < 10000; ++i) deep = json::array({std::move(deep)});
  CHECK(Type::of(deep).kind == TypeKind::list);
}

TEST_CASE("type: from_schema reads type, properties and items") {
  const auto t = Type::from_schema(json::parse(R"({
      "type": "object",
      "properties": {
        "n": {"type": "integer"}, "x": {"type": "number"}, "s": {"type": "string"},
        "b": {"type": "boolean"}, "z": {"type": "null"},
        "l": {"type": "array", "items": {"type": "string"}}, "any": {}
      }})"));
  REQUIRE(t.kind == TypeKind::object);
  CHECK(t.fields.at("n") == Type::of_kind(TypeKind::number));
  CHECK(t.fields.at("x") == Type::of_kind(TypeKind::number));
  CHECK(t.fields.at("s") == Type::of_kind(TypeKind::string));
  CHECK(t.fields.at("b") == Type::of_kind(TypeKind::boolean));
  CHECK(t.fields.at("z") == Type::of_kind(TypeKind::null));
  CHECK(to_string(t.fields.at("l")) == "list of string");
  CHECK(t.fields.at("any") == Type::any());
}

TEST_CASE("type: from_schema gives any for a list of types, an unknown type or a non-object") {
  CHECK(Type::from_schema(json::parse(R"({"type": ["string", "null"]})")) == Type::any());
  CHECK(Type::from_schema(json::parse(R"({"type": "date"})")) == Type::any());
  CHECK(Type::from_schema(json("string")) == Type::any());
  CHECK(Type::from_schema(json()) == Type::any());
  CHECK(to_string(Type::from_schema(json::parse(R"({"type": "array"})"))) == "list");
}

TEST_CASE("type: member of an object gives its field, or any unless closed") {
  auto t = Type::of(json{{"a", 1}});
  CHECK(*t.member("a") == Type::of_kind(TypeKind::number));
  CHECK(*t.member("b") == Type::any());
  t.closed = true;
  CHECK(t.member("b") == nullptr);
}

TEST_CASE("type: member of any is any; of another kind, nullptr") {
  CHECK(*Type::any().member("x") == Type::any());
  CHECK(Type::of_kind(TypeKind::number).member("x") == nullptr);
  CHECK(Type::of_kind(TypeKind::list).member("x") == nullptr);
}

TEST_CASE("type: equality compares kinds, members, closedness and elements") {
  CHECK(Type::of(json{{"a", 1}}) == Type::of(json{{"a", 2}}));
  CHECK_FALSE(Type::of(json{{"a", 1}}) == Type::of(json{{"a", "x"}}));
  auto closed = Type::of(json{{"a", 1}});
  closed.closed = true;
  CHECK_FALSE(closed == Type::of(json{{"a", 1}}));
  CHECK_FALSE(Type::of(json{1}) == Type::of(json{"a"}));
  Type any_element = Type::of_kind(TypeKind::list);
  any_element.element = std::make_shared<const Type>(Type::any());
  CHECK(any_element == Type::of_kind(TypeKind::list));
}

TEST_CASE("type: to_string names kinds for messages") {
  CHECK(to_string(Type::any()) == "any");
  CHECK(to_string(Type::of_kind(TypeKind::boolean)) == "boolean");
  CHECK(to_string(Type::of(json::object())) == "object");
}

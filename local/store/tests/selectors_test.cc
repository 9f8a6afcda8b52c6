#include "local/store/selectors.h"

#include <gtest/gtest.h>

#include "local/store/tests/test_types.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;

bool matches(const std::string& selector, const json& labels) {
  auto s = LabelSelector::parse(selector);
  EXPECT_TRUE(s.ok()) << selector << ": " << (s.ok() ? "" : s.error().message());
  return s.ok() && s->matches(labels);
}

TEST(LabelSelector, EqualityAndSetBasedRequirements) {
  json l = {{"app", "demo"}, {"tier", "a"}};
  EXPECT_TRUE(matches("", l));
  EXPECT_TRUE(matches("app=demo", l));
  EXPECT_TRUE(matches("app==demo,tier=a", l));
  EXPECT_FALSE(matches("app!=demo", l));
  EXPECT_TRUE(matches("app!=other", l));
  EXPECT_TRUE(matches("missing!=x", l));
  EXPECT_TRUE(matches("tier in (a, b)", l));
  EXPECT_FALSE(matches("tier notin (a,b)", l));
  EXPECT_TRUE(matches("missing notin (a)", l));
  EXPECT_TRUE(matches("app", l));
  EXPECT_FALSE(matches("!app", l));
  EXPECT_TRUE(matches("app=demo,tier in (a),!missing", l));
  EXPECT_TRUE(matches("example.com/x!=1", l));
  EXPECT_FALSE(matches("app=demo", json()));
}

TEST(LabelSelector, BadSelectorsAre400) {
  for (const char* bad :
       {"tier in a", "=x", "app=demo,", "tier in ()", "a b", "-bad=x", "app=-x-"}) {
    auto s = LabelSelector::parse(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code(), 400);
    EXPECT_EQ(s.error().reason(), "BadRequest");
  }
  EXPECT_EQ(LabelSelector::parse("tier in a").error().message(),
            "unable to parse requirement: found 'a', expected: '('");
}

TEST(FieldSelector, ParsesAndMatches) {
  ResourceType pods = testing::pods();
  json pod = {{"metadata", {{"name", "p,1"}, {"namespace", "ns"}}},
              {"spec", {{"nodeName", "n1"}}},
              {"status", {{"phase", "Running"}}}};
  auto s = FieldSelector::parse("metadata.name=p\\,1,status.phase!=Failed,spec.nodeName==n1", pods);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->matches(pod));
  auto t = FieldSelector::parse("status.phase=Pending", pods);
  EXPECT_FALSE(t->matches(pod));
  auto bad = FieldSelector::parse("nonsense", pods);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "invalid selector: 'nonsense'; can't understand 'nonsense'");
  EXPECT_EQ(FieldSelector::parse("spec.foo=1", pods).error().message(),
            "field label not supported: spec.foo");
}

TEST(FieldSelector, EventsSelectByInvolvedObjectReasonTypeAndSource) {
  ResourceType events;
  events.version = "v1";
  events.resource = "events";
  events.kind = "Event";
  events.builtin = true;
  events.selectable_fields = {"involvedObject.kind",
                              "involvedObject.name",
                              "involvedObject.uid",
                              "involvedObject.namespace",
                              "reason",
                              "source",
                              "type"};
  json ev = {
      {"metadata", {{"name", "e"}, {"namespace", "default"}}},
      {"involvedObject", {{"kind", "Pod"}, {"name", "p"}, {"namespace", "default"}, {"uid", "u1"}}},
      {"reason", "Started"},
      {"type", "Normal"},
      {"source", {{"component", "kubelet"}}}};
  auto describe = FieldSelector::parse(
      "involvedObject.namespace=default,involvedObject.uid=u1,involvedObject.name=p", events);
  ASSERT_TRUE(describe.ok());
  EXPECT_TRUE(describe->matches(ev));
  EXPECT_FALSE(FieldSelector::parse("involvedObject.uid=u2", events)->matches(ev));
  EXPECT_TRUE(FieldSelector::parse("involvedObject.kind=Pod,reason=Started,type=Normal", events)
                  ->matches(ev));
  EXPECT_TRUE(FieldSelector::parse("source=kubelet", events)->matches(ev));
  EXPECT_FALSE(FieldSelector::parse("type=Warning", events)->matches(ev));
}

}  // namespace
}  // namespace ringmaster::local

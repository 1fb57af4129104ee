// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// WalkLayout: placements, program order and common loops on a nested program.
#include "model/walk_layout.h"

#include <gtest/gtest.h>

namespace mstar {
namespace {

SectionSpec Node(const std::string& name) {
  SectionSpec s;
  s.kind = SectionSpec::Kind::kNode;
  s.node = name;
  return s;
}

SectionSpec Group(SectionSpec::Kind kind, std::vector<SectionSpec> children) {
  SectionSpec s;
  s.kind = kind;
  s.children = std::move(children);
  return s;
}

SectionSpec Seq(std::vector<SectionSpec> children) {
  return Group(SectionSpec::Kind::kSequence, std::move(children));
}

SectionSpec Par(std::vector<SectionSpec> children) {
  return Group(SectionSpec::Kind::kParallel, std::move(children));
}

SectionSpec Loop(const std::string& name, SectionSpec body) {
  SectionSpec s = Group(SectionSpec::Kind::kLoop, {std::move(body)});
  s.loop = name;
  return s;
}

// sequence [ a, loop outer { sequence [ b, parallel [ c, loop inner { sequence [d, e] } ], f ] },
//            g ]
class NestedLayout : public ::testing::Test {
 protected:
  NestedLayout() {
    walk_.name = "w";
    walk_.run = Seq(
        {Node("a"),
         Loop("outer", Seq({Node("b"), Par({Node("c"), Loop("inner", Seq({Node("d"), Node("e")}))}),
                            Node("f")})),
         Node("g")});
    layout_ = std::make_unique<WalkLayout>(walk_);
  }

  const NodePlacement& At(const std::string& node) const {
    const NodePlacement* p = layout_->Find(node);
    EXPECT_NE(p, nullptr) << node;
    return *p;
  }
  bool Precedes(const std::string& a, const std::string& b) const {
    return layout_->Precedes(At(a), At(b));
  }
  std::string CommonLoop(const std::string& a, const std::string& b) const {
    const SectionSpec* loop = layout_->CommonLoop(At(a), At(b));
    return loop == nullptr ? "(none)" : loop->loop;
  }

  WalkSpec walk_;
  std::unique_ptr<WalkLayout> layout_;
};

TEST_F(NestedLayout, PlacementsInProgramOrder) {
  std::vector<std::string> order;
  for (const NodePlacement& p : layout_->placements()) order.push_back(p.node);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g"}));
  EXPECT_TRUE(layout_->repeated().empty());
  EXPECT_EQ(layout_->Find("zz"), nullptr);

  const NodePlacement& d = At("d");
  EXPECT_EQ(d.path, (std::vector<size_t>{1, 0, 1, 1, 0, 0}));
  EXPECT_EQ(d.loops, (std::vector<std::string>{"outer", "inner"}));
  ASSERT_EQ(d.ancestors.size(), 6u);
  EXPECT_EQ(d.ancestors[0], &walk_.run);
  EXPECT_EQ(d.ancestors[3]->kind, SectionSpec::Kind::kParallel);
  EXPECT_EQ(d.ancestors[4]->loop, "inner");
  ASSERT_NE(d.section, nullptr);
  EXPECT_EQ(d.section->node, "d");
  EXPECT_EQ(At("a").path, std::vector<size_t>{0});
  EXPECT_TRUE(At("a").loops.empty());
  EXPECT_EQ(At("f").loops, std::vector<std::string>{"outer"});
}

TEST_F(NestedLayout, PrecedesFollowsSequences) {
  EXPECT_TRUE(Precedes("a", "b"));
  EXPECT_FALSE(Precedes("b", "a"));
  EXPECT_TRUE(Precedes("a", "g"));
  EXPECT_TRUE(Precedes("b", "d"));  // into a parallel branch and a nested loop
  EXPECT_TRUE(Precedes("d", "e"));
  EXPECT_FALSE(Precedes("e", "d"));
  EXPECT_TRUE(Precedes("c", "f"));
  EXPECT_TRUE(Precedes("e", "f"));
  EXPECT_TRUE(Precedes("f", "g"));
  EXPECT_FALSE(Precedes("g", "a"));
}

TEST_F(NestedLayout, ParallelSiblingsAndANodeItselfAreUnordered) {
  EXPECT_FALSE(Precedes("c", "d"));
  EXPECT_FALSE(Precedes("d", "c"));
  EXPECT_FALSE(Precedes("c", "e"));
  EXPECT_FALSE(Precedes("e", "c"));
  EXPECT_FALSE(Precedes("a", "a"));
  EXPECT_FALSE(Precedes("d", "d"));
}

TEST_F(NestedLayout, CommonLoopIsTheInnermost) {
  EXPECT_EQ(CommonLoop("d", "e"), "inner");
  EXPECT_EQ(CommonLoop("d", "d"), "inner");
  EXPECT_EQ(CommonLoop("c", "d"), "outer");
  EXPECT_EQ(CommonLoop("b", "f"), "outer");
  EXPECT_EQ(CommonLoop("f", "f"), "outer");
  EXPECT_EQ(CommonLoop("a", "b"), "(none)");
  EXPECT_EQ(CommonLoop("e", "g"), "(none)");
  EXPECT_EQ(CommonLoop("a", "a"), "(none)");
}

TEST(WalkLayout, RepeatedNodesAreListedOnceAndKeepTheirFirstPlace) {
  WalkSpec walk;
  walk.run = Seq({Node("a"), Par({Node("b"), Node("a")}), Loop("l", Seq({Node("b"), Node("a")}))});
  WalkLayout layout(walk);
  EXPECT_EQ(layout.repeated(), (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(layout.placements().size(), 2u);
  EXPECT_EQ(layout.Find("a")->path, std::vector<size_t>{0});
  EXPECT_EQ(layout.Find("b")->path, (std::vector<size_t>{1, 0}));
  EXPECT_TRUE(layout.Find("b")->loops.empty());
}

TEST(WalkLayout, ASingleNodeProgram) {
  WalkSpec walk;
  walk.run = Node("only");
  WalkLayout layout(walk);
  ASSERT_EQ(layout.placements().size(), 1u);
  const NodePlacement& only = layout.placements()[0];
  EXPECT_TRUE(only.path.empty());
  EXPECT_TRUE(only.ancestors.empty());
  EXPECT_EQ(only.section, &walk.run);
  EXPECT_FALSE(layout.Precedes(only, only));
  EXPECT_EQ(layout.CommonLoop(only, only), nullptr);
}

}  // namespace
}  // namespace mstar

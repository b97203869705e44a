// OpRegistry: lookup as TensorRT's ONNX parser does (op_type + plugin_version + plugin_namespace),
// domain disambiguation, aliases, duplicates, and the not-found message; and the SDK's kernel
// view-count check (check_kernel_io).
#include <gtest/gtest.h>

#include "graft/registry.h"
#include "libs/test_op.h"
#include "test_util.h"

namespace {

using graft::OpRegistry;
using graft::StatusCode;
using graft_test::define_scale_op;
using graft_test::expect_contains;
using graft_test::expect_error;

graft::OpDef with_namespace(graft::OpDef def, const std::string& ns) {
  def.plugin_namespace(ns);
  return def;
}

TEST(Registry, LookupByTypeVersionAndNamespace) {
  OpRegistry r;
  ASSERT_TRUE(r.add(define_scale_op("ai.test", "Foo", "1"), "lib_v1").is_ok());
  ASSERT_TRUE(r.add(define_scale_op("ai.test", "Foo", "2"), "lib_v2").is_ok());
  ASSERT_TRUE(r.add(with_namespace(define_scale_op("ai.test", "Foo", "1"), "acme"), "lib_acme").is_ok());

  auto v1 = r.find("ai.test", "Foo", "1", "");
  ASSERT_TRUE(v1.is_ok()) << v1.status().to_string();
  EXPECT_EQ((*v1)->identity().version, "1");
  EXPECT_EQ((*v1)->identity().plugin_namespace, "");

  auto v2 = r.find("ai.test", "Foo", "2", "");
  ASSERT_TRUE(v2.is_ok()) << v2.status().to_string();
  EXPECT_EQ((*v2)->identity().version, "2");

  auto acme = r.find("ai.test", "Foo", "1", "acme");
  ASSERT_TRUE(acme.is_ok()) << acme.status().to_string();
  EXPECT_EQ((*acme)->identity().plugin_namespace, "acme");
  EXPECT_NE(acme->get(), v1->get());

  // A version that exists only in another namespace is not a match.
  expect_error(r.find("ai.test", "Foo", "2", "acme").status(), StatusCode::kNotFound,
               {"'Foo'", "plugin_version '2'", "plugin_namespace 'acme'"});
}

TEST(Registry, DomainDisambiguatesSameNameVersionNamespace) {
  OpRegistry r;
  ASSERT_TRUE(r.add(define_scale_op("ai.alpha", "Bar"), "lib_alpha").is_ok());
  ASSERT_TRUE(r.add(define_scale_op("ai.beta", "Bar"), "lib_beta").is_ok());

  auto a = r.find("ai.alpha", "Bar", "1", "");
  auto b = r.find("ai.beta", "Bar", "1", "");
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ((*a)->identity().domain, "ai.alpha");
  EXPECT_EQ((*b)->identity().domain, "ai.beta");
  // Registration order must not decide: look the second one up first in a fresh registry too.
  OpRegistry r2;
  ASSERT_TRUE(r2.add(define_scale_op("ai.beta", "Bar"), "lib_beta").is_ok());
  ASSERT_TRUE(r2.add(define_scale_op("ai.alpha", "Bar"), "lib_alpha").is_ok());
  EXPECT_EQ((*r2.find("ai.alpha", "Bar", "1", ""))->identity().domain, "ai.alpha");

  // Like TensorRT (which ignores the domain), a name match in another domain is still found.
  auto other = r.find("some.other.domain", "Bar", "1", "");
  ASSERT_TRUE(other.is_ok()) << other.status().to_string();
  EXPECT_EQ((*other)->name(), "Bar");
}

TEST(Registry, AliasLookup) {
  OpRegistry r;
  graft::OpDef def = define_scale_op("ai.test", "RealOp");
  graft::OpIdentity target = def.identity();
  ASSERT_TRUE(r.add(std::move(def), "lib").is_ok());
  ASSERT_TRUE(r.add_alias("mmdeploy", "MMScale", target, "lib").is_ok());

  auto via_alias = r.find("mmdeploy", "MMScale", "1", "");
  ASSERT_TRUE(via_alias.is_ok()) << via_alias.status().to_string();
  EXPECT_EQ((*via_alias)->name(), "RealOp");
  EXPECT_EQ(via_alias->get(), r.find_exact(target).get());
  ASSERT_EQ(r.aliases().size(), 1u);

  // Alias version/namespace still apply: the alias answers only for the target's version.
  EXPECT_FALSE(r.find("mmdeploy", "MMScale", "2", "").is_ok());

  expect_error(r.add_alias("mmdeploy", "MMScale", target, "lib2"), StatusCode::kAlreadyExists,
               {"MMScale", "already registered"});
  graft::OpIdentity missing = target;
  missing.name = "NotThere";
  expect_error(r.add_alias("mmdeploy", "MMOther", missing, "lib3"), StatusCode::kNotFound,
               {"MMOther", "NotThere", "unregistered"});
}

TEST(Registry, NotFoundNamesWhatWasLookedForAndWhatIsRegistered) {
  OpRegistry r;
  ASSERT_TRUE(r.add(define_scale_op("ai.onnx.contrib", "CustomLayer", "1"), "graft").is_ok());
  ASSERT_TRUE(r.add(with_namespace(define_scale_op("ai.onnx.contrib", "CustomLayer", "3"), "acme"), "libacme.so").is_ok());

  auto res = r.find("ai.onnx.contrib", "CustomLayer", "2", "");
  expect_error(res.status(), StatusCode::kNotFound,
               {"op_type 'CustomLayer'", "domain 'ai.onnx.contrib'", "plugin_version '2'", "plugin_namespace ''",
                "registered ops with that name", "CustomLayer version 1 namespace ''",
                "CustomLayer version 3 namespace 'acme'"});

  auto none = r.find("ai.example", "Nonexistent", "1", "");
  expect_error(none.status(), StatusCode::kNotFound,
               {"op_type 'Nonexistent'", "domain 'ai.example'", "no op named 'Nonexistent'",
                "plugin library that defines it"});
}

TEST(Registry, DuplicateNamesBothSources) {
  OpRegistry r;
  ASSERT_TRUE(r.add(define_scale_op("ai.test", "Dup"), "first.so").is_ok());
  expect_error(r.add(define_scale_op("ai.test", "Dup"), "second.so"), StatusCode::kAlreadyExists,
               {"ai.test::Dup", "'second.so'", "already registered", "'first.so'"});
  // Same name, other version: a new key, allowed (older versions stay beside newer ones).
  EXPECT_TRUE(r.add(define_scale_op("ai.test", "Dup", "2"), "second.so").is_ok());
  auto all = r.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].def->identity().version, "1");
  EXPECT_EQ(all[0].source, "first.so");
  EXPECT_EQ(all[1].def->identity().version, "2");
}

TEST(Registry, RejectsIncompleteDefinitions) {
  OpRegistry r;
  graft::OpDef no_kernel("NoKernel");
  no_kernel.input("x").output("y").shape_fn([](graft::ShapeContext& c) {
    c.set_output(0, c.input_shape(0));
    return graft::Status::ok();
  });
  expect_error(r.add(std::move(no_kernel), "x.so"), StatusCode::kInvalidArgument, {"NoKernel", "no CPU reference kernel"});

  graft::OpDef reserved = define_scale_op("ai.test", "Reserved");
  reserved.attr_string("plugin_version", std::string("1"));
  expect_error(r.add(std::move(reserved), "x.so"), StatusCode::kInvalidArgument, {"plugin_version", "reserved"});
  EXPECT_TRUE(r.all().empty());
}

// Outputs are positional, so a node can only leave out trailing ones: an optional output followed
// by a required one is a definition error naming the required one.
TEST(Registry, OnlyTrailingOutputsMayBeOptional) {
  OpRegistry r;
  graft::OpDef bad = define_scale_op("ai.test", "OptionalFirst");
  bad.optional_output("extra").output("after");
  expect_error(r.add(std::move(bad), "x.so"), StatusCode::kInvalidArgument, {"OptionalFirst", "'after'", "optional"});
  graft::OpDef good = define_scale_op("ai.test", "OptionalLast");
  good.optional_output("extra");
  EXPECT_TRUE(r.add(std::move(good), "x.so").is_ok());
}

}  // namespace

// The SDK's first check in every kernel: the number of views, with the op and the kernel named.
namespace {
TEST(KernelIo, CheckKernelIoNamesOpKernelAndCounts) {
  graft::KernelContext ctx;
  ctx.inputs.resize(2);
  ctx.outputs.resize(1);
  EXPECT_TRUE(graft::check_kernel_io(ctx, "Foo", 2, 1).is_ok());
  expect_error(graft::check_kernel_io(ctx, "Foo", 3, 2, "backward kernel"), StatusCode::kInvalidArgument,
               {"Foo: backward kernel expects 3 inputs and 2 outputs, got 2 and 1"});
  expect_error(graft::check_kernel_io(ctx, "Foo", 1, 1), StatusCode::kInvalidArgument,
               {"Foo: kernel expects 1 input and 1 output, got 2 and 1"});
}
}  // namespace

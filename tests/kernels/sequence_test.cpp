// sequence_test.cpp — the sequence operators beyond the ONNX backend tests:
// positions (negative, the end, out of range), SplitToSequence with a scalar
// chunk that does not divide, keepdims, ConcatFromSequence with new_axis at
// both ends, items that share their buffers, the refusals (a sequence where a
// tensor is expected and the reverse, mixed element types, empty sequences).
#include <gtest/gtest.h>

#include <vector>

#include "kernel_errors.h"
#include "kernels/kernel.h"
#include "spindle/thread_pool.h"

namespace spindle {
namespace {

using kernels::run_kernel_once;

Tensor one(const std::string& op, Attributes attrs, std::vector<Tensor> inputs) {
  return run_kernel_once(op, 13, std::move(attrs), std::move(inputs))[0];
}

Tensor seq_of(std::vector<float> firsts) {
  std::vector<Tensor> items;
  for (float f : firsts) items.push_back(Tensor::from_vector<float>({2}, {f, f + 0.5f}));
  return Tensor::sequence(DataType::kFloat32, items);
}

std::vector<float> firsts(const Tensor& seq) {
  std::vector<float> out;
  for (const Tensor& t : seq.sequence_items()) out.push_back(t.data<float>()[0]);
  return out;
}

TEST(Sequence, InsertAtPositionsAndEraseKeepOrder) {
  const Tensor s = seq_of({1, 2, 3});
  const Tensor x = Tensor::from_vector<float>({2}, {9, 9.5f});
  EXPECT_EQ(firsts(one("SequenceInsert", {}, {s, x})), (std::vector<float>{1, 2, 3, 9}));
  EXPECT_EQ(firsts(one("SequenceInsert", {}, {s, x, Tensor::scalar<int64_t>(0)})), (std::vector<float>{9, 1, 2, 3}));
  EXPECT_EQ(firsts(one("SequenceInsert", {}, {s, x, Tensor::scalar<int32_t>(-1)})), (std::vector<float>{1, 2, 9, 3}));
  EXPECT_EQ(firsts(one("SequenceInsert", {}, {s, x, Tensor::scalar<int64_t>(3)})), (std::vector<float>{1, 2, 3, 9}));
  EXPECT_EQ(firsts(one("SequenceErase", {}, {s})), (std::vector<float>{1, 2}));
  EXPECT_EQ(firsts(one("SequenceErase", {}, {s, Tensor::scalar<int64_t>(-3)})), (std::vector<float>{2, 3}));
  // The input sequence is a value: inserting and erasing made new ones.
  EXPECT_EQ(firsts(s), (std::vector<float>{1, 2, 3}));
  // Items are shared, not copied.
  const Tensor at = one("SequenceAt", {}, {s, Tensor::scalar<int64_t>(-1)});
  EXPECT_EQ(at.buffer(), s.sequence_items()[2].buffer());
  EXPECT_EQ(one("SequenceLength", {}, {s}).data<int64_t>()[0], 3);
}

TEST(Sequence, PositionsOutOfRangeAndTypeMismatchesAreClearErrors) {
  const Tensor s = seq_of({1, 2, 3});
  testing::expect_error("SequenceAt", 13, {}, {s, Tensor::scalar<int64_t>(3)},
                        {"SequenceAt", "position 3 is out of range", "3 tensor(s)", "[-3, 2]"});
  testing::expect_error("SequenceInsert", 13, {}, {s, Tensor::from_vector<float>({1}, {0}), Tensor::scalar<int64_t>(-4)},
                        {"position -4", "[-3, 3]"});
  testing::expect_error("SequenceAt", 13, {}, {s, Tensor::scalar<float>(1)}, {"position is float32", "int32 or int64"});
  testing::expect_error("SequenceInsert", 13, {}, {s, Tensor::from_vector<int64_t>({1}, {0})},
                        {"int64 1", "sequence of float32"});
  testing::expect_error("SequenceErase", 13, {}, {Tensor::sequence(DataType::kFloat32, {})}, {"empty sequence"});
  testing::expect_error("SequenceConstruct", 13, {},
                        {Tensor::from_vector<float>({1}, {0}), Tensor::from_vector<int64_t>({1}, {0})},
                        {"input 1 is int64 1", "float32 like input 0"});
  // A sequence where a tensor is expected, and the reverse.
  testing::expect_error("Relu", 13, {}, {s}, {"Relu", "input 0 is a sequence of 3 float32", "expected a tensor"});
  testing::expect_error("SequenceLength", 13, {}, {Tensor::from_vector<float>({1}, {0})},
                        {"input 0 is the tensor float32 1", "expected a sequence"});
  testing::expect_error("ConcatFromSequence", 13, {{"axis", int64_t{0}}}, {Tensor::sequence(DataType::kFloat32, {})},
                        {"sequence is empty"});
}

TEST(SplitToSequence, ScalarChunkLeavesAShorterLastPieceAndKeepdimsSqueezes) {
  std::vector<float> v(2 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Tensor x = Tensor::from_vector<float>({2, 7}, v);
  auto pool = ThreadPool::create(ThreadingOptions{.num_threads = 2}).value();
  const Tensor s = run_kernel_once("SplitToSequence", 11, {{"axis", int64_t{1}}}, {x, Tensor::scalar<int64_t>(3)}, 1,
                                   pool.get())[0];
  ASSERT_EQ(s.sequence_items().size(), 3u);
  EXPECT_EQ(s.sequence_items()[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(s.sequence_items()[2].shape(), (Shape{2, 1}));
  EXPECT_EQ(s.sequence_items()[2].to_vector<float>(), (std::vector<float>{6, 13}));
  EXPECT_EQ(s.sequence_items()[1].to_vector<float>(), (std::vector<float>{3, 4, 5, 10, 11, 12}));
  // No split: pieces of 1, squeezed when keepdims = 0.
  const Tensor k = one("SplitToSequence", {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}}, {x});
  ASSERT_EQ(k.sequence_items().size(), 2u);
  EXPECT_EQ(k.sequence_items()[1].shape(), (Shape{7}));
  EXPECT_EQ(k.sequence_items()[1].to_vector<float>()[0], 7.0f);
  // keepdims is ignored when split is given.
  const Tensor g = one("SplitToSequence", {{"keepdims", int64_t{0}}},
                       {x, Tensor::from_vector<int64_t>({2}, {1, 1})});
  EXPECT_EQ(g.sequence_items()[0].shape(), (Shape{1, 7}));
  testing::expect_error("SplitToSequence", 11, {}, {x, Tensor::from_vector<int64_t>({2}, {1, 2})},
                        {"sums to 3", "size 2"});
}

TEST(ConcatFromSequence, NewAxisStacksAtEitherEndAndConcatUndoesSplit) {
  const Tensor a = Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector<float>({2, 2}, {5, 6, 7, 8});
  const Tensor s = Tensor::sequence(DataType::kFloat32, {a, b});
  const Tensor front = one("ConcatFromSequence", {{"axis", int64_t{0}}, {"new_axis", int64_t{1}}}, {s});
  EXPECT_EQ(front.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(front.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  const Tensor back = one("ConcatFromSequence", {{"axis", int64_t{-1}}, {"new_axis", int64_t{1}}}, {s});
  EXPECT_EQ(back.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{1, 5, 2, 6, 3, 7, 4, 8}));
  const Tensor cat = one("ConcatFromSequence", {{"axis", int64_t{1}}}, {s});
  EXPECT_EQ(cat.shape(), (Shape{2, 4}));
  const Tensor split = one("SplitToSequence", {{"axis", int64_t{1}}}, {cat, Tensor::scalar<int64_t>(2)});
  EXPECT_EQ(split.sequence_items()[0].to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(split.sequence_items()[1].to_vector<float>(), b.to_vector<float>());
  testing::expect_error("ConcatFromSequence", 13, {{"axis", int64_t{3}}, {"new_axis", int64_t{1}}}, {s},
                        {"axis 3 is out of range", "rank-3"});
}

TEST(Optional, WrapsTensorsAndSequencesAndRefusesToUnwrapNothing) {
  const Tensor x = Tensor::from_vector<float>({2}, {1, 2});
  const Tensor wrapped = run_kernel_once("Optional", 15, {}, {x})[0];
  ASSERT_TRUE(wrapped.is_optional());
  EXPECT_EQ(wrapped.optional_value()->buffer(), x.buffer());
  EXPECT_TRUE(run_kernel_once("OptionalHasElement", 15, {}, {wrapped})[0].data<bool>()[0]);
  EXPECT_EQ(run_kernel_once("OptionalGetElement", 15, {}, {wrapped})[0].buffer(), x.buffer());
  const Tensor empty = run_kernel_once("Optional", 15, {{"type", TypeAttr{true, DataType::kInt64}}}, {})[0];
  EXPECT_TRUE(empty.is_optional() && empty.optional_of_sequence() && !empty.optional_value());
  EXPECT_EQ(empty.dtype(), DataType::kInt64);
  EXPECT_FALSE(run_kernel_once("OptionalHasElement", 15, {}, {empty})[0].data<bool>()[0]);
  testing::expect_error("OptionalGetElement", 15, {}, {empty}, {"input is an empty optional (sequence of int64)"});
  testing::expect_error("Optional", 15, {}, {Tensor()}, {"the attribute 'type' is required"});
  testing::expect_error("Relu", 13, {}, {wrapped}, {"input 0 is an optional holding the float32 2, expected a tensor"});
  // An optional of a sequence must hold a sequence.
  EXPECT_THROW(Tensor::optional(DataType::kFloat32, true, x), Error);
}

}  // namespace
}  // namespace spindle

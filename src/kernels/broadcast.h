// broadcast.h — NumPy-style (multidirectional) broadcasting helpers.
#pragma once

#include <array>
#include <span>
#include <string>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace spindle::kernels {

// The broadcast of several shapes into `out`; false when they are
// incompatible, with `bad` (when given) set to {dimension from the right,
// the size so far, the size that does not fit}.
inline bool try_broadcast_shapes(std::span<const Shape> shapes, Shape& out, std::array<int64_t, 3>* bad = nullptr) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  out.assign(rank, 1);
  for (const Shape& s : shapes) {
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[off + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o == 1) {
        o = s[i];
        continue;
      }
      if (bad) *bad = {static_cast<int64_t>(rank - (off + i)), o, s[i]};
      return false;
    }
  }
  return true;
}

// The broadcast of several shapes; throws naming the node and the shapes
// when they are incompatible.
inline Shape broadcast_shapes(const NodeInfo& node, std::span<const Shape> shapes) {
  Shape out;
  std::array<int64_t, 3> bad{};
  if (try_broadcast_shapes(shapes, out, &bad)) return out;
  std::string all;
  for (const Shape& t : shapes) all += (all.empty() ? "" : ", ") + shape_to_string(t);
  fail(node, fmt::format("shapes {} cannot be broadcast together (dimension {} from the right: {} vs {})", all, bad[0],
                         bad[1], bad[2]));
}

// Element strides of a tensor of `in_shape` read as `out_shape` (0 on
// broadcast dimensions); the result has out_shape's rank.
inline Shape broadcast_strides(const Shape& in_shape, const Shape& out_shape) {
  Shape strides(out_shape.size(), 0);
  const Shape in_strides = contiguous_strides(in_shape);
  const size_t off = out_shape.size() - in_shape.size();
  for (size_t i = 0; i < in_shape.size(); ++i)
    strides[off + i] = in_shape[i] == 1 ? 0 : in_strides[i];
  return strides;
}

}  // namespace spindle::kernels

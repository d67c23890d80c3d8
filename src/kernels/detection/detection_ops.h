// detection_ops.h — helpers and registration entry points of
// src/kernels/detection (object detection and sampling ops: one entry point
// per file; register.cpp calls them all).
#pragma once

#include <string>

#include <fmt/format.h>

#include "kernels/kernel.h"

namespace spindle::kernels::detection {

// Requires input `name` to have rank `rank`.
inline void require_rank(const NodeInfo& node, const Tensor& t, const char* name, int64_t rank, const char* layout) {
  if (t.rank() != rank) fail(node, fmt::format("input {} is {}, expected rank {} ({})", name, t.describe(), rank, layout));
}

void register_nms(KernelRegistry& r);          // nms.cpp: NonMaxSuppression
void register_roi_align(KernelRegistry& r);    // roi_align.cpp: RoiAlign
void register_max_unpool(KernelRegistry& r);   // max_unpool.cpp: MaxUnpool
void register_grid_sample(KernelRegistry& r);  // grid_sample.cpp: GridSample

}  // namespace spindle::kernels::detection

// rnn_step.h — the per-ISA entry points of the recurrent steps of RNN / GRU /
// LSTM (rnn_step.isa.cpp, which describes the packed R and the fused steps),
// for kernels/nn/rnn.cpp. Every argument list is short, so they stay
// positional.
#pragma once

#include <cstdint>

#include "primitives/isa/dispatch.h"

// Rows of a packed panel of R, and the floats R [rows, len] packs into.
SPINDLE_ISA_DECLARE(int64_t, rnn_panel_rows, ());
SPINDLE_ISA_DECLARE(int64_t, rnn_packed_size, (int64_t rows, int64_t len));
SPINDLE_ISA_DECLARE(void, rnn_pack, (const float* r, int64_t rows, int64_t len, float* out));
// out[j] = sum_k R[j, k] x[k] over the packed R (backward: R's panels are
// walked from the last).
SPINDLE_ISA_DECLARE(void, rnn_matvec_packed, (const float* packed, int64_t rows, int64_t len, const float* x,
                                              float* out, bool backward));
// The fused cell steps: gates xg (input part) + hg (recurrent part), the
// state updated in place.
SPINDLE_ISA_DECLARE(void, lstm_step, (const float* xg, const float* hg, int64_t H, const float* peep, float clip,
                                      bool input_forget, float* c, float* h));
SPINDLE_ISA_DECLARE(void, gru_lbr_step, (const float* xg, const float* hg, const float* rbh, int64_t H, float clip,
                                         float* h));
SPINDLE_ISA_DECLARE(void, gru_zr_step, (const float* xg, const float* hg, const float* h, int64_t H, float clip,
                                        float* z, float* rh));
SPINDLE_ISA_DECLARE(void, gru_h_step, (const float* xh, const float* rhr, const float* rbh, const float* z, int64_t H,
                                       float clip, float* h));
SPINDLE_ISA_DECLARE(void, rnn_tanh_step, (const float* xg, const float* hg, int64_t H, float clip, float* h));
// Gate non-linearities over a vector, in place.
SPINDLE_ISA_DECLARE(void, sigmoid_inplace, (float* v, int64_t n));
SPINDLE_ISA_DECLARE(void, tanh_inplace, (float* v, int64_t n));

/* checks.h — the checks of the C API test programs, C and C++ alike.
 * CHECK(expr) ends the program when an API call returns an error status
 * (the program defines `ort`, its OrtApi table); EXPECT(cond) reports a
 * false condition and counts it in the program's `failures`. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#define CHECK(expr)                                                                              \
  do {                                                                                           \
    OrtStatus* st_ = (expr);                                                                     \
    if (st_) {                                                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, ort->GetErrorMessage(st_)); \
      ort->ReleaseStatus(st_);                                                                   \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

#define EXPECT(cond)                                                       \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                          \
    }                                                                      \
  } while (0)

/* The program's exit status: 1 (and the count on stderr) when a check
 * failed, else 0 (and "NAME: all checks passed"). */
#define CHECKS_DONE(name)                                                    \
  (failures ? (fprintf(stderr, "%d check(s) failed\n", failures), 1)        \
            : (printf("%s: all checks passed\n", (name)), 0))

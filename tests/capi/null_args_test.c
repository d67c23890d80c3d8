/* null_args_test.c — every slot of the table that returns a status, called
 * with all arguments zero / NULL, must come back with an error status (the
 * unimplemented ones with ORT_NOT_IMPLEMENTED naming themselves, the
 * implemented ones refusing the NULL argument), never crash. The slot list is
 * src/capi/slots.inc. Each slot is called through a pointer type with more
 * parameters than it takes, all zero: on x86-64 and AArch64 the extra
 * registers are ignored by the callee. */
#include <stdio.h>
#include <string.h>

#include "onnxruntime/onnxruntime_c_api.h"

typedef struct {
  const char* name;
  size_t offset;
} Slot;

#define SPINDLE_ORT_STATUS_SLOT(name, params) {#name, offsetof(OrtApi, name)},
#define SPINDLE_ORT_RELEASE_SLOT(name, params)
#define SPINDLE_ORT_VALUE_SLOT(name, ret, params)
static const Slot status_slots[] = {
#include "capi/slots.inc"
};

#undef SPINDLE_ORT_STATUS_SLOT
#undef SPINDLE_ORT_RELEASE_SLOT
#undef SPINDLE_ORT_VALUE_SLOT
/* The slots that return no status (values, releases): called the same way,
 * they must return (their results are not looked at). */
#define SPINDLE_ORT_STATUS_SLOT(name, params)
#define SPINDLE_ORT_RELEASE_SLOT(name, params) {#name, offsetof(OrtApi, name)},
#define SPINDLE_ORT_VALUE_SLOT(name, ret, params) {#name, offsetof(OrtApi, name)},
static const Slot other_slots[] = {
#include "capi/slots.inc"
};

/* Slots for which NULL arguments are a valid request. */
static const char* const accepts_null[] = {"EnableTelemetryEvents", "DisableTelemetryEvents", "ReleaseAvailableProviders"};

typedef void* (*AnyValueSlot)(void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*);
typedef OrtStatus* (*AnySlot)(void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*, void*);

int main(void) {
  const OrtApi* ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  size_t n = sizeof status_slots / sizeof status_slots[0], failures = 0, not_implemented = 0;
  for (size_t i = 0; i < n; ++i) {
    AnySlot fn = *(const AnySlot*)((const char*)ort + status_slots[i].offset);
    OrtStatus* st = fn(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    int allowed = 0;
    for (size_t k = 0; k < sizeof accepts_null / sizeof accepts_null[0]; ++k)
      if (strcmp(accepts_null[k], status_slots[i].name) == 0) allowed = 1;
    if (!st) {
      if (!allowed) {
        fprintf(stderr, "%s accepted NULL arguments\n", status_slots[i].name);
        failures++;
      }
      continue;
    }
    const char* msg = ort->GetErrorMessage(st);
    if (ort->GetErrorCode(st) == ORT_OK || !msg || !strstr(msg, status_slots[i].name)) {
      fprintf(stderr, "%s: code %d, message '%s' (expected an error naming the function)\n", status_slots[i].name,
              (int)ort->GetErrorCode(st), msg ? msg : "(null)");
      failures++;
    }
    if (ort->GetErrorCode(st) == ORT_NOT_IMPLEMENTED) not_implemented++;
    ort->ReleaseStatus(st);
  }
  size_t m = sizeof other_slots / sizeof other_slots[0];
  for (size_t i = 0; i < m; ++i) {
    AnyValueSlot fn = *(const AnyValueSlot*)((const char*)ort + other_slots[i].offset);
    void* r = fn(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    if (strcmp(other_slots[i].name, "CreateStatus") == 0) ort->ReleaseStatus((OrtStatus*)r);
  }
  printf("%zu other slots called with NULL arguments returned\n", m);
  printf("%zu status slots called with NULL arguments: %zu ORT_NOT_IMPLEMENTED, the others refused the arguments\n", n,
         not_implemented);
  return failures ? 1 : 0;
}

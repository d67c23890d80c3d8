/* layout_test.c — the binary layout of struct OrtApi: the table's size and
 * the index of well-known slots, as ONNX Runtime 1.30 lays them out. A
 * program built against ONNX Runtime's header calls slot i of the table it
 * gets, so an inserted, dropped or moved slot breaks every such program;
 * these checks fail at compile time first. */
#include <stddef.h>
#include <stdio.h>

#include "onnxruntime/onnxruntime_c_api.h"

#define SLOT(name) (offsetof(OrtApi, name) / sizeof(void*))
#define EXPECT_SLOT(name, index) _Static_assert(SLOT(name) == (index), #name " is not slot " #index)

EXPECT_SLOT(CreateStatus, 0);
EXPECT_SLOT(CreateEnv, 3);
EXPECT_SLOT(CreateSession, 7);
EXPECT_SLOT(CreateSessionFromArray, 8);
EXPECT_SLOT(Run, 9);
EXPECT_SLOT(CreateTensorWithDataAsOrtValue, 49);
EXPECT_SLOT(GetTensorMutableData, 51);
EXPECT_SLOT(GetStringTensorContent, 54);
EXPECT_SLOT(ReleaseStatus, 93);
EXPECT_SLOT(ReleaseValue, 96);
EXPECT_SLOT(SessionGetModelMetadata, 111);
EXPECT_SLOT(CreateEnvWithGlobalThreadPools, 119);
EXPECT_SLOT(DisablePerSessionThreads, 120);
EXPECT_SLOT(CreateIoBinding, 134);
EXPECT_SLOT(SetGlobalCustomCreateThreadFn, 199);
EXPECT_SLOT(SetGlobalCustomJoinThreadFn, 201);
EXPECT_SLOT(RegisterCustomOpsLibrary_V2, 228);
EXPECT_SLOT(KernelContext_ParallelFor, 274);
EXPECT_SLOT(SessionOptionsSetWeightlessSourceModelBuffer, 424);
/* The slot API version 30 added, the last one. */
EXPECT_SLOT(KernelContext_GetPreallocatedOutput, 425);
_Static_assert(sizeof(OrtApi) == 426 * sizeof(void*), "OrtApi of API version 30 has 426 slots");
_Static_assert(ORT_API_VERSION == 30, "the header describes API version 30");

/* struct OrtCustomOp: a uint32_t version (padded to a pointer), then 25
 * callbacks in ONNX Runtime's order; libraries fill it by offset. */
#define OP_FIELD(name) (offsetof(OrtCustomOp, name) / sizeof(void*))
#define EXPECT_OP_FIELD(name, index) _Static_assert(OP_FIELD(name) == (index), #name " is not field " #index)
EXPECT_OP_FIELD(CreateKernel, 1);
EXPECT_OP_FIELD(KernelCompute, 8);
EXPECT_OP_FIELD(KernelDestroy, 9);
EXPECT_OP_FIELD(GetInputCharacteristic, 10);
EXPECT_OP_FIELD(GetInputMemoryType, 12);
EXPECT_OP_FIELD(GetVariadicOutputHomogeneity, 16);
EXPECT_OP_FIELD(CreateKernelV2, 17);
EXPECT_OP_FIELD(KernelComputeV2, 18);
EXPECT_OP_FIELD(InferOutputShapeFn, 19);
EXPECT_OP_FIELD(GetStartVersion, 20);
EXPECT_OP_FIELD(GetEndVersion, 21);
EXPECT_OP_FIELD(GetMayInplace, 22);
EXPECT_OP_FIELD(ReleaseAliasMap, 25);
_Static_assert(sizeof(OrtCustomOp) == 26 * sizeof(void*), "OrtCustomOp of API version 30 has 25 callbacks");

int main(void) {
  /* Every slot of the library's table is set: implemented, or a function
   * answering ORT_NOT_IMPLEMENTED. */
  const OrtApi* api = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (!api) {
    fprintf(stderr, "GetApi(%d) returned NULL\n", ORT_API_VERSION);
    return 1;
  }
  void* const* slots = (void* const*)api;
  for (size_t i = 0; i < sizeof(OrtApi) / sizeof(void*); ++i)
    if (!slots[i]) {
      fprintf(stderr, "slot %zu is NULL\n", i);
      return 1;
    }
  printf("OrtApi: %zu slots, all set; CreateSession at %zu, Run at %zu\n", sizeof(OrtApi) / sizeof(void*),
         SLOT(CreateSession), SLOT(Run));
  return 0;
}

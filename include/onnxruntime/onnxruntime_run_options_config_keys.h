// onnxruntime_run_options_config_keys.h — keys for Ort::RunOptions::AddConfigEntry
// / AddRunConfigEntry, under ONNX Runtime's names. spindle keeps every run
// config entry and reads them back (GetRunConfigEntry); docs/capi.md.
#pragma once

// Semicolon separated devices ("cpu:0") whose arena shrinks after the run.
static const char* const kOrtRunOptionsConfigEnableMemoryArenaShrinkage = "memory.enable_memory_arena_shrinkage";
// "1": the run does not wait for the providers' streams when it returns.
static const char* const kOrtRunOptionsConfigDisableSynchronizeExecutionProviders =
    "disable_synchronize_execution_providers";
// Id of the captured graph to replay (providers with graph capture).
static const char* const kOrtRunOptionsConfigCudaGraphAnnotation = "gpu_graph_id";

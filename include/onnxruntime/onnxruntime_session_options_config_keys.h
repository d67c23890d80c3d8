// onnxruntime_session_options_config_keys.h — keys for
// Ort::SessionOptions::AddConfigEntry / AddSessionConfigEntry, under ONNX
// Runtime's names. spindle's session options (SessionOptions::add_config_entry)
// act on the thread, memory-limit and model-format keys and accept the others
// with a warning; docs/capi.md.
#pragma once

// "0"/"1": the session uses the env's shared allocators.
static const char* const kOrtSessionOptionsConfigUseEnvAllocators = "session.use_env_allocators";
// "ORT" or "ONNX": the format of the model file to load / to save.
static const char* const kOrtSessionOptionsConfigLoadModelFormat = "session.load_model_format";
static const char* const kOrtSessionOptionsConfigSaveModelFormat = "session.save_model_format";
// "1": the ORT-format model bytes are used in place, not copied.
static const char* const kOrtSessionOptionsConfigUseORTModelBytesDirectly = "session.use_ort_model_bytes_directly";
static const char* const kOrtSessionOptionsConfigUseORTModelBytesForInitializers =
    "session.use_ort_model_bytes_for_initializers";
// "1": no QuantizeLinear/DequantizeLinear fusion.
static const char* const kOrtSessionOptionsDisableQuantQDQ = "session.disable_quant_qdq";
static const char* const kOrtSessionOptionsDisableDoubleQDQRemover = "session.disable_double_qdq_remover";
static const char* const kOrtSessionOptionsEnableQuantQDQCleanup = "session.enable_quant_qdq_cleanup";
static const char* const kOrtSessionOptionsQDQIsInt8Allowed = "session.qdqisint8allowed";
static const char* const kOrtSessionOptionsAvx2PrecisionMode = "session.x64quantprecision";
// "1": GELU is approximated with tanh.
static const char* const kOrtSessionOptionsEnableGeluApproximation = "optimization.enable_gelu_approximation";
// Comma separated names of optimizers to leave out.
static const char* const kOrtSessionOptionsDisableSpecifiedOptimizers = "optimization.disable_specified_optimizers";
static const char* const kOrtSessionOptionsDisableAheadOfTimeFunctionInlining = "session.disable_aot_function_inlining";
static const char* const kOrtSessionOptionsConfigMinimalBuildOptimizations = "optimization.minimal_build_optimizations";
// "1": a model using an opset newer than the latest released one fails.
static const char* const kOrtSessionOptionsConfigStrictAllowReleasedOpsetsOnly = "session.allow_released_opsets_only";
static const char* const kNodePartitionConfigFile = "session.node_partition_config_file";
static const char* const kDebugLayoutTransformation = "session.debug_layout_transformation";
// "1": errors in shape/type inference fail the session.
static const char* const kOrtSessionOptionsConfigStrictShapeTypeInference = "session.strict_shape_type_inference";
// "0"/"1": worker threads of the intra-op / inter-op pool spin before sleeping.
static const char* const kOrtSessionOptionsConfigAllowIntraOpSpinning = "session.intra_op.allow_spinning";
static const char* const kOrtSessionOptionsConfigAllowInterOpSpinning = "session.inter_op.allow_spinning";
// "1": flush denormal results to zero in the session's pool threads.
static const char* const kOrtSessionOptionsConfigSetDenormalAsZero = "session.set_denormal_as_zero";
// "1": workers stop spinning once a run ends.
static const char* const kOrtSessionOptionsConfigForceSpinningStop = "session.force_spinning_stop";
// Block size base of the intra-op pool's dynamic scheduling ("0" = off).
static const char* const kOrtSessionOptionsConfigDynamicBlockBase = "session.dynamic_block_base";
// Processor ids of the intra-op workers: "1,2;3-4;..." (one group per worker).
static const char* const kOrtSessionOptionsConfigIntraOpThreadAffinities = "session.intra_op_thread_affinities";
// "1": fail instead of placing nodes on the CPU when another provider cannot.
static const char* const kOrtSessionOptionsDisableCPUEPFallback = "session.disable_cpu_ep_fallback";
// "1": weights are not pre-packed.
static const char* const kOrtSessionOptionsConfigDisablePrepacking = "session.disable_prepacking";
static const char* const kOrtSessionOptionsUseDeviceAllocatorForInitializers =
    "session.use_device_allocator_for_initializers";
static const char* const kOrtSessionOptionsOptimizedModelExternalInitializersFileName =
    "session.optimized_model_external_initializers_file_name";
static const char* const kOrtSessionOptionsOptimizedModelExternalInitializersMinSizeInBytes =
    "session.optimized_model_external_initializers_min_size_in_bytes";
static const char* const kOrtSessionOptionsModelExternalInitializersFileFolderPath =
    "session.model_external_initializers_file_folder_path";
static const char* const kOrtSessionOptionsSavePrePackedConstantInitializers =
    "session.save_external_prepacked_constant_initializers";
// Path of a CSV file receiving per-node memory figures.
static const char* const kOrtSessionOptionsCollectNodeMemoryStatsToFile = "session.collect_node_memory_stats_to_file";
// Accuracy level of the MatMulNBits made from DequantizeLinear + MatMul.
static const char* const kOrtSessionOptionsQDQMatMulNBitsAccuracyLevel = "session.qdq_matmulnbits_accuracy_level";
// EP context models.
static const char* const kOrtSessionOptionEpContextEnable = "ep.context_enable";
static const char* const kOrtSessionOptionEpContextFilePath = "ep.context_file_path";
static const char* const kOrtSessionOptionEpContextEmbedMode = "ep.context_embed_mode";

// index.d.ts — TypeScript types for the spindle Node.js package (index.js).
//
// Written for spindle, in the shape of onnxruntime-node's types (its package
// onnxruntime-common, MIT) for what spindle implements, so code typed against
// onnxruntime-node type-checks after changing the import. What spindle does
// not have is left out rather than declared and ignored: no GPU data
// locations (texture, gpu-buffer, ml-tensor, cpu-pinned) and the factories
// that make them, no registerBackend / TRACE helpers. Tensor.fromImage,
// toImageData and toDataURL are declared because onnxruntime-node declares
// them; in Node.js they throw in both (they need browser image objects).

export declare namespace Tensor {
  interface DataTypeMap {
    float32: Float32Array;
    uint8: Uint8Array;
    int8: Int8Array;
    uint16: Uint16Array;
    int16: Int16Array;
    int32: Int32Array;
    int64: BigInt64Array;
    string: string[];
    bool: Uint8Array;
    float16: Uint16Array;
    /** spindle only (onnxruntime-node has no bfloat16): the bits, as for float16 */
    bfloat16: Uint16Array;
    float64: Float64Array;
    uint32: Uint32Array;
    uint64: BigUint64Array;
    uint4: Uint8Array;
    int4: Int8Array;
  }
  type Type = keyof DataTypeMap;
  type DataType = DataTypeMap[Type];
  /** 'cpu', or 'none' once disposed (the GPU locations of onnxruntime-node do not exist here). */
  type DataLocation = 'none' | 'cpu' | 'cpu-pinned' | 'texture' | 'gpu-buffer' | 'ml-tensor';
}

export interface TypedTensor<T extends Tensor.Type> {
  readonly type: T;
  /** The data; throws 'The tensor is disposed.' after dispose(). */
  readonly data: Tensor.DataTypeMap[T];
  readonly dims: readonly number[];
  /** Number of elements: the product of dims. */
  readonly size: number;
  readonly location: Tensor.DataLocation;
  /** The data (already in CPU memory). */
  getData(releaseData?: boolean): Promise<Tensor.DataTypeMap[T]>;
  /** Drops the data; location becomes 'none'. */
  dispose(): void;
  /** A tensor over the same data with other dims of the same element count. */
  reshape(dims: readonly number[]): TypedTensor<T>;
  /** Throws in Node.js, as onnxruntime-node's (needs OffscreenCanvas). */
  toDataURL(options?: unknown): string;
  /** Throws in Node.js, as onnxruntime-node's (needs OffscreenCanvas). */
  toImageData(options?: unknown): unknown;
}

export interface Tensor extends TypedTensor<Tensor.Type> {}

export interface TensorConstructor {
  /** Throws in Node.js, as onnxruntime-node's (needs browser image objects). */
  fromImage(image: unknown, options?: unknown): Promise<TypedTensor<'float32'> | TypedTensor<'uint8'>>;
  new (type: 'string', data: Tensor.DataTypeMap['string'] | readonly string[], dims?: readonly number[]): TypedTensor<'string'>;
  new (type: 'bool', data: Tensor.DataTypeMap['bool'] | readonly boolean[], dims?: readonly number[]): TypedTensor<'bool'>;
  new <T extends 'uint64' | 'int64'>(type: T, data: Tensor.DataTypeMap[T] | readonly bigint[] | readonly number[],
    dims?: readonly number[]): TypedTensor<T>;
  new <T extends Exclude<Tensor.Type, 'string' | 'bool' | 'uint64' | 'int64'>>(type: T,
    data: Tensor.DataTypeMap[T] | readonly number[], dims?: readonly number[]): TypedTensor<T>;
  new (data: Float32Array, dims?: readonly number[]): TypedTensor<'float32'>;
  new (data: Float64Array, dims?: readonly number[]): TypedTensor<'float64'>;
  new (data: Int8Array, dims?: readonly number[]): TypedTensor<'int8'>;
  new (data: Uint8Array, dims?: readonly number[]): TypedTensor<'uint8'>;
  new (data: Int16Array, dims?: readonly number[]): TypedTensor<'int16'>;
  new (data: Uint16Array, dims?: readonly number[]): TypedTensor<'uint16'>;
  new (data: Int32Array, dims?: readonly number[]): TypedTensor<'int32'>;
  new (data: Uint32Array, dims?: readonly number[]): TypedTensor<'uint32'>;
  new (data: BigInt64Array, dims?: readonly number[]): TypedTensor<'int64'>;
  new (data: BigUint64Array, dims?: readonly number[]): TypedTensor<'uint64'>;
  new (data: Uint8ClampedArray, dims?: readonly number[]): TypedTensor<'uint8'>;
  new (data: readonly string[], dims?: readonly number[]): TypedTensor<'string'>;
  new (data: readonly boolean[], dims?: readonly number[]): TypedTensor<'bool'>;
  new (type: Tensor.Type, data: Tensor.DataType | readonly number[] | readonly string[] | readonly bigint[] |
    readonly boolean[], dims?: readonly number[]): Tensor;
  new (data: Tensor.DataType, dims?: readonly number[]): Tensor;
}

export declare const Tensor: TensorConstructor;

/** A value fed to or returned by a session: spindle's Node package passes tensors only. */
export type OnnxValue = Tensor;

export declare namespace InferenceSession {
  type OnnxValueMapType = { readonly [name: string]: OnnxValue };
  type NullableOnnxValueMapType = { readonly [name: string]: OnnxValue | null };
  type FeedsType = OnnxValueMapType;
  /** Output names, as an array or as the keys of an object. */
  type FetchesType = readonly string[] | NullableOnnxValueMapType;
  type ReturnType = OnnxValueMapType;

  interface ExecutionProviderOption {
    readonly name: string;
  }
  interface CpuExecutionProviderOption extends ExecutionProviderOption {
    readonly name: 'cpu';
    useArena?: boolean;
  }
  /**
   * Only the CPU provider exists: other names are dropped with a warning (as
   * onnxruntime-node drops a provider it does not have); a list without 'cpu'
   * is refused.
   */
  type ExecutionProviderConfig = CpuExecutionProviderOption | ExecutionProviderOption | string;

  interface SessionOptions {
    executionProviders?: readonly ExecutionProviderConfig[];
    /** Threads for one operator, counting the calling thread; 0 or absent = physical cores available. */
    intraOpNumThreads?: number;
    /** Inter-op pool size (executionMode 'parallel'); 0 or absent = physical cores available. */
    interOpNumThreads?: number;
    /** 'layout' runs as 'extended'. */
    graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'layout' | 'all';
    /** Accepted; spindle plans memory per run itself. */
    enableCpuMemArena?: boolean;
    /** Accepted; spindle plans memory per run itself. */
    enableMemPattern?: boolean;
    executionMode?: 'sequential' | 'parallel';
    /** Accepted and ignored, as onnxruntime-node 1.30 ignores it. */
    freeDimensionOverrides?: { readonly [dimensionName: string]: number };
    /** Not written (spindle's optimized graph is not ONNX): a warning says so. */
    optimizedModelFilePath?: string;
    /** Only 'cpu' exists; other locations are ignored with a warning. */
    preferredOutputLocation?: Tensor.DataLocation | { readonly [outputName: string]: Tensor.DataLocation };
    /** Accepted; spindle has no graph capture. */
    enableGraphCapture?: boolean;
    /** Ignored with a warning: external data files are read from beside the model file. */
    externalData?: readonly (string | { data: unknown; path: string })[];
    enableProfiling?: boolean;
    profileFilePrefix?: string;
    /**
     * spindle only: runs of a session whose recent runs took less than this
     * many microseconds run on the JavaScript thread instead of a libuv worker
     * (the hop to a worker and its cold caches cost 3-14% of a 5-40 ms run).
     * Default 50000 (onnxruntime-node runs every run on the JavaScript thread);
     * 0 sends every run to a worker, so that runs issued together overlap.
     */
    syncRunThresholdUs?: number;
    /** Accepted; spindle has no log levels. */
    logId?: string;
    /** 3 (error) or 4 (fatal) silences spindle's warnings for this session. */
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    /** Accepted; spindle has no log levels. */
    logVerbosityLevel?: number;
    /** Session config entries, nested: { session: { intra_op: { allow_spinning: '0' } } }. */
    extra?: Record<string, unknown>;
  }

  /**
   * logSeverityLevel, logVerbosityLevel, tag and extra are accepted for
   * onnxruntime-node compatibility and change nothing.
   */
  interface RunOptions {
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    logVerbosityLevel?: number;
    /** true: the run is cancelled (it rejects; the session stays usable). */
    terminate?: boolean;
    tag?: string;
    extra?: Record<string, unknown>;
    /**
     * spindle only: a run that takes longer than this many milliseconds
     * rejects ("exceeded its time limit"), checked between nodes, inside
     * long nodes and between Loop/Scan iterations; the session stays usable.
     * A non-negative integer; 0 or absent = no limit.
     */
    timeoutMs?: number;
  }

  interface NonTensorValueMetadata {
    readonly name: string;
    readonly isTensor: false;
  }
  interface TensorValueMetadata {
    readonly name: string;
    readonly isTensor: true;
    readonly type: Tensor.Type;
    /** A dynamic dimension is its name from the model ('' if unnamed). */
    readonly shape: ReadonlyArray<number | string>;
  }
  type ValueMetadata = NonTensorValueMetadata | TensorValueMetadata;
}

export interface InferenceSession {
  run(feeds: InferenceSession.FeedsType, options?: InferenceSession.RunOptions): Promise<InferenceSession.ReturnType>;
  run(feeds: InferenceSession.FeedsType, fetches: InferenceSession.FetchesType,
    options?: InferenceSession.RunOptions): Promise<InferenceSession.ReturnType>;
  release(): Promise<void>;
  /** Profiling records every run from creation on (enableProfiling); nothing to start. */
  startProfiling(): void;
  /**
   * With enableProfiling: writes the recorded runs as a Chrome trace file and
   * returns its path (onnxruntime-node returns nothing); otherwise a no-op.
   */
  endProfiling(): string | undefined;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly InferenceSession.ValueMetadata[];
}

export interface InferenceSessionFactory {
  create(uri: string, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  create(buffer: ArrayBufferLike, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  create(buffer: ArrayBufferLike, byteOffset: number, byteLength?: number,
    options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  create(buffer: Uint8Array, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
}

export declare const InferenceSession: InferenceSessionFactory;

export declare namespace Env {
  interface WebAssemblyFlags { [name: string]: unknown }
  interface WebGLFlags { [name: string]: unknown }
  interface WebGpuFlags { [name: string]: unknown }
}

export interface Env {
  /** 'error' or 'fatal' silences spindle's warnings. */
  logLevel?: 'verbose' | 'info' | 'warning' | 'error' | 'fatal';
  debug?: boolean;
  trace?: boolean;
  /** common: the onnxruntime-common API version followed; node and spindle: spindle's version. */
  readonly versions: {
    readonly common: string;
    readonly web?: string;
    readonly node?: string;
    readonly 'react-native'?: string;
    readonly spindle?: string;
  };
  /** Empty, as in onnxruntime-node (browser backends' settings). */
  readonly wasm: Env.WebAssemblyFlags;
  readonly webgl: Env.WebGLFlags;
  readonly webgpu: Env.WebGpuFlags;
  [name: string]: unknown;
}

export declare const env: Env;

/** The backends this package runs on: [{ name: 'cpu', bundled: true }]. */
export declare function listSupportedBackends(): { name: string; bundled: boolean }[];

/** The threading configuration: pools, thread counts and where they came from. */
export declare function parallelInfo(): string;

/** The version of the spindle library the addon was built against, e.g. "0.1.0". */
export declare const version: string;

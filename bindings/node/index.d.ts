// index.d.ts — TypeScript types for the spindle Node.js package (index.js).
//
// Written for spindle, in the shape of onnxruntime-node's types (its package
// onnxruntime-common, MIT) for what spindle implements, so code typed against
// onnxruntime-node type-checks after changing the import. What spindle does
// not have is left out rather than declared and ignored: no GPU data
// locations, no Tensor.getData()/dispose(), no input/output metadata, no
// ArrayBuffer byteOffset overload of create().

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
    float64: Float64Array;
    uint32: Uint32Array;
    uint64: BigUint64Array;
  }
  type Type = keyof DataTypeMap;
  type DataType = DataTypeMap[Type];
}

export interface TypedTensor<T extends Tensor.Type> {
  readonly type: T;
  readonly data: Tensor.DataTypeMap[T];
  readonly dims: readonly number[];
  /** Number of elements: the product of dims. */
  readonly size: number;
}

export interface Tensor extends TypedTensor<Tensor.Type> {}

export interface TensorConstructor {
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
  /** Only the CPU provider exists; any other name is refused at create(). */
  type ExecutionProviderConfig = CpuExecutionProviderOption | 'cpu' | 'CPUExecutionProvider';

  interface SessionOptions {
    executionProviders?: readonly ExecutionProviderConfig[];
    /** Threads for one operator, counting the calling thread; 0 or absent = physical cores available. */
    intraOpNumThreads?: number;
    /** Inter-op pool size (executionMode 'parallel'); 0 or absent = physical cores available. */
    interOpNumThreads?: number;
    graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
    /** Accepted; spindle plans memory per run itself. */
    enableCpuMemArena?: boolean;
    /** Accepted; spindle plans memory per run itself. */
    enableMemPattern?: boolean;
    executionMode?: 'sequential' | 'parallel';
    enableProfiling?: boolean;
    profileFilePrefix?: string;
    /**
     * spindle only: runs of a session whose recent runs took less than this
     * many microseconds run on the JavaScript thread instead of a libuv worker
     * (the hop costs more than such a run). Default 100; 0 sends every run to
     * a worker.
     */
    syncRunThresholdUs?: number;
    /** Accepted; spindle has no log levels. */
    logId?: string;
    /** Accepted; spindle has no log levels. */
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    /** Accepted; spindle has no log levels. */
    logVerbosityLevel?: number;
    /** Session config entries, nested: { session: { intra_op: { allow_spinning: '0' } } }. */
    extra?: Record<string, unknown>;
  }

  /** Accepted for onnxruntime-node compatibility; they change nothing. */
  interface RunOptions {
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    logVerbosityLevel?: number;
    terminate?: boolean;
    tag?: string;
    extra?: Record<string, unknown>;
  }
}

export interface InferenceSession {
  run(feeds: InferenceSession.FeedsType, options?: InferenceSession.RunOptions): Promise<InferenceSession.ReturnType>;
  run(feeds: InferenceSession.FeedsType, fetches: InferenceSession.FetchesType,
    options?: InferenceSession.RunOptions): Promise<InferenceSession.ReturnType>;
  release(): Promise<void>;
  /** Profiling records every run from creation on (enableProfiling); nothing to start. */
  startProfiling(): void;
  /** Writes the recorded runs as a Chrome trace file and returns its path (onnxruntime-node returns nothing). */
  endProfiling(): string;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
}

export interface InferenceSessionFactory {
  create(uri: string, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  create(buffer: ArrayBufferLike, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  create(buffer: Uint8Array, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
}

export declare const InferenceSession: InferenceSessionFactory;

/** The threading configuration: pools, thread counts and where they came from. */
export declare function parallelInfo(): string;

/** The version of the spindle library the addon was built against, e.g. "0.1.0". */
export declare const version: string;

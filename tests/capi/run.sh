#!/usr/bin/env bash
# run.sh — the C API tests ctest runs (tests/CMakeLists.txt, label capi).
#
#   run.sh c            TEST CAPI_COMPARE TYPES_MODEL WORKDIR
#       TEST (capi_test; capi_cxx_test for the C++ API) on spindle's library;
#       with the PP-OCR classifier present
#       also its outputs, checked bitwise against spindle's C++ API.
#   run.sh onnxruntime  TEST TYPES_MODEL WORKDIR
#       the same program on ONNX Runtime's libonnxruntime.so.1 (the header's
#       table layout is ONNX Runtime's); 77 = skipped when it is absent.
#   run.sh on_onnxruntime  TEST ARGS...
#       TEST ARGS... --onnxruntime on ONNX Runtime's library (the custom-op
#       programs); 77 = skipped when it is absent.
#   run.sh sample       SAMPLE WORKDIR [--onnxruntime]
#       the IO-binding sample on the PP-OCR classifier (WORKDIR/relu.onnx when
#       it is absent), on spindle's library or with --onnxruntime on ONNX
#       Runtime's (77 = skipped when it is absent).
#   run.sh symbols      LIBONNXRUNTIME
#       the library exports OrtGetApiBase@@VERS_1.30.0 and
#       OrtSessionOptionsAppendExecutionProvider_CPU@@VERS_1.30.0, nothing else.
set -euo pipefail
models=${SPINDLE_MODELS_DIR:-$HOME/.cache/spindle/models}
cls=$models/ch_ppocr_mobile_v2.0_cls_infer.onnx
ort_dir=${SPINDLE_ORT_MODULES:-$HOME/.cache/spindle/ort/node_modules}/onnxruntime-node/bin/napi-v6/linux/x64

case $1 in
  c)
    test=$2 compare=$3 types=$4 work=$5
    if [[ -f $cls ]]; then
      out=$work/cls_$(basename "$test").bin
      "$test" "$types" "$cls" "$out"
      "$compare" "$cls" "$out"
    else
      echo "note: $cls not found; the PP-OCR comparison is left out"
      "$test" "$types"
    fi
    ;;
  onnxruntime)
    test=$2 types=$3 work=$4
    if [[ ! -f $ort_dir/libonnxruntime.so.1 ]]; then
      echo "skipped: ONNX Runtime's library not found in $ort_dir"
      exit 77
    fi
    if [[ -f $cls ]]; then
      LD_LIBRARY_PATH=$ort_dir "$test" "$types" "$cls" "$work/cls_$(basename "$test")_onnxruntime.bin" --onnxruntime
    else
      LD_LIBRARY_PATH=$ort_dir "$test" "$types" --onnxruntime
    fi
    ;;
  on_onnxruntime)
    if [[ ! -f $ort_dir/libonnxruntime.so.1 ]]; then
      echo "skipped: ONNX Runtime's library not found in $ort_dir"
      exit 77
    fi
    shift
    LD_LIBRARY_PATH=$ort_dir "$@" --onnxruntime
    ;;
  sample)
    sample=$2 work=$3
    model=$cls
    [[ -f $model ]] || model=$work/relu.onnx
    if [[ ${4:-} == --onnxruntime ]]; then
      if [[ ! -f $ort_dir/libonnxruntime.so.1 ]]; then
        echo "skipped: ONNX Runtime's library not found in $ort_dir"
        exit 77
      fi
      LD_LIBRARY_PATH=$ort_dir "$sample" "$model" --onnxruntime
    else
      "$sample" "$model"
    fi
    ;;
  symbols)
    lib=$2
    exports=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "W" || $2 == "D" || $2 == "B" {print $3}' | sort)
    expected=$'OrtGetApiBase@@VERS_1.30.0\nOrtSessionOptionsAppendExecutionProvider_CPU@@VERS_1.30.0'
    if [[ $exports != "$expected" ]]; then
      echo "$lib exports:"
      echo "$exports"
      echo "expected exactly:"
      echo "$expected"
      exit 1
    fi
    soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
    [[ $soname == libonnxruntime.so.1 ]] || { echo "SONAME is '$soname', expected libonnxruntime.so.1"; exit 1; }
    echo "exports: $(echo $exports); SONAME $soname"
    ;;
  *)
    echo "usage: run.sh c|onnxruntime|on_onnxruntime|symbols ..." >&2
    exit 2
    ;;
esac

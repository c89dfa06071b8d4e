package inference

import "fmt"

// Precision is the arithmetic a GPU backend may use for a model's float32
// values. A mode allows a GPU to trade accuracy for speed; the CPU
// backend computes in float32 in every mode. A model's inputs and outputs keep their declared
// types in every mode.
type Precision string

const (
	// FP32: float32 products with float32 accumulation, the CPU backend's
	// numerics (within the check tolerances: rtol 1e-4, atol 1e-5). The
	// default.
	FP32 Precision = "fp32"
	// TF32: matrix products (MatMul, Gemm, Conv, the recurrent cells' and
	// attention's GEMMs) on tensor cores, their inputs rounded to
	// TensorFloat-32 (float32's range, 10 bits of mantissa), accumulated in
	// float32 (cuBLAS's CUBLAS_TF32_TENSOR_OP_MATH, on Ampere and later;
	// older GPUs compute in float32). Everything else is float32. Relative
	// errors of products grow to about 1e-3.
	TF32 Precision = "tf32"
	// FP16: the values of the operators a GPU backend runs in float16
	// (convolutions, matrix products, elementwise and activation
	// operators, normalisations, softmax, pooling, reductions, data
	// movement) stored in float16, weights included: a model's weights
	// and activations take half the memory and bandwidth, and its
	// products run on tensor cores with float16 inputs. Every kernel
	// computes in float32 (products and reductions accumulate in
	// float32) and rounds what it stores to the nearest float16; the
	// operators without a float16 kernel compute in float32 between
	// conversions. The model's inputs and outputs keep their declared
	// types. The meaning of a model in FP16 is its graph rewritten by
	// passes.StoreInFloat16 (inference/cuda's Passes and Reference): each
	// converted node computes from float16 operands and rounds its outputs
	// once. The GPU rounds twice in two places, as float16 kernels do,
	// inside the mode's tolerance: a convolution whose bias and clamp its
	// reader applies as it gathers rounds its product first, and
	// attention rounds its weights before multiplying V. Float16 keeps 11 significant bits, so each value is off by up
	// to 4.9e-4 of itself and results by about 1e-3 to 1e-2 relative, and
	// its range is narrow: a value beyond ±65504 becomes ±Inf, one below
	// 2^-14 (6.1e-5) in magnitude keeps fewer bits, and one at or below
	// 2^-25 becomes 0. A model whose weights or activations leave that
	// range, or whose results turn on differences float16 cannot hold
	// (inputs such as 10000 and 10001), needs FP32 or TF32.
	FP16 Precision = "fp16"
)

// PrecisionOption is the Spec option that chooses a model's Precision:
// Options[PrecisionOption] = "tf32". RunInference's Precision sets it.
const PrecisionOption = "precision"

// ParsePrecision reads a Precision; the empty string is FP32.
func ParsePrecision(s string) (Precision, error) {
	switch p := Precision(s); p {
	case "":
		return FP32, nil
	case FP32, TF32, FP16:
		return p, nil
	}
	return "", fmt.Errorf("inference: precision %q: want %q, %q or %q", s, FP32, TF32, FP16)
}

// Precision returns the precision the spec's options choose, FP32 when
// they choose none; an option that names no precision is an error wrapping
// ErrBadModel (the spec cannot load).
func (s Spec) Precision() (Precision, error) {
	p, err := ParsePrecision(s.Options[PrecisionOption])
	if err != nil {
		return "", fmt.Errorf("%v: option %s: %w: %w", s, PrecisionOption, err, ErrBadModel)
	}
	return p, nil
}

// WithPrecision returns a copy of s whose option PrecisionOption is p.
func (s Spec) WithPrecision(p Precision) Spec {
	opts := make(map[string]string, len(s.Options)+1)
	for k, v := range s.Options {
		opts[k] = v
	}
	opts[PrecisionOption] = string(p)
	s.Options = opts
	return s
}

package inference

import "fmt"

// Precision is the arithmetic a GPU backend may use for a model's float32
// products. A mode allows a GPU to trade accuracy for speed; the CPU
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
	// FP16: the same matrix products on tensor cores with their inputs
	// rounded to float16 (to nearest even), accumulated in float32
	// (cublasGemmEx on float32 matrices with CUBLAS_COMPUTE_32F_FAST_16F,
	// which allows cuBLAS the conversion; tensor cores from Volta on, and
	// on older GPUs cuBLAS may compute in float32). Weights and
	// activations stay float32 in memory and everything else is float32:
	// the products convert their inputs as they read them (storing them in
	// half is not implemented yet, so FP16 saves neither memory nor
	// bandwidth; it gains the tensor cores' half-precision rate). Half
	// keeps TF32's 11 significant bits, so relative errors of products are
	// about 1e-3 as in TF32, but not its range: an input beyond ±65504
	// becomes ±Inf, one below 2^-14 (6.1e-5) in magnitude keeps fewer
	// bits, and one at or below 2^-25 becomes 0. A model whose products'
	// inputs leave that range needs FP32 or TF32.
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

package cuda

import (
	"math"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the linear models and feature transforms of ai.onnx.ml
// (LinearClassifier, LinearRegressor, Scaler, Normalizer, Binarizer,
// Imputer), one launch a node (ml.cu). Each reads its attributes with
// opsem, as the CPU backend does; the coefficients, offsets and imputed
// values become plan constants. On the host stay the nodes the kernels do
// not take: a linear model of an integer X, and any input of another type
// (float16: the CPU backend reports it). A classifier of string labels
// reaches the device as one of indices (passes.IndexClassLabels).

func init() {
	registerLowering(mlDomain+".LinearClassifier", lowerLinear)
	registerLowering(mlDomain+".LinearRegressor", lowerLinear)
	registerLowering(mlDomain+".Scaler", lowerScaler)
	registerLowering(mlDomain+".Normalizer", lowerNormalizer)
	registerLowering(mlDomain+".Binarizer", lowerBinarizer)
	registerLowering(mlDomain+".Imputer", lowerImputer)
}

// mlKernel picks the entry point of a feature kernel family by X's type:
// f32, f64, i64 or i32, in that order; "" for another type.
func mlKernel(x inference.DType, f32, f64, i64, i32 string) string {
	switch x {
	case inference.Float32:
		return f32
	case inference.Float64:
		return f64
	case inference.Int64:
		return i64
	case inference.Int32:
		return i32
	}
	return ""
}

// mlConstant makes values a plan constant named after the node's first
// output (the outputs' names are the graph's own, and unique) and what
// they are.
func mlConstant[T inference.Element](l *lowering, what string, values []T) (operand, error) {
	t, err := inference.New([]int{len(values)}, values)
	if err != nil {
		return operand{}, err
	}
	name := ""
	for _, out := range l.Node.Outputs {
		if out != "" {
			name = out
			break
		}
	}
	return l.p.constant(name+"("+what+")", t), nil
}

// mlMatrix is X's rows and columns as the ai.onnx.ml models read it
// (opsem.MLMatrix): [N, C] as N rows of C, [C] as one row.
func mlMatrix(l *lowering, x operand) (rows, cols int, err error) {
	switch x.Rank() {
	case 1:
		return 1, x.Shape[0], nil
	case 2:
		return x.Shape[0], x.Shape[1], nil
	}
	return 0, 0, l.NoKernel("X is %v%v", x.DType, x.Shape) // the host reports it
}

// mlNode reads node l's attributes with read and picks the entry point of
// its input X's type (mlKernel): a node the kernels do not take, or whose
// attributes are bad, goes to the host, which reports it.
func mlNode[A any](l *lowering, read func(opsem.Node) (A, error), f32, f64, i64, i32 string) (x operand, kernel string, a A, err error) {
	x = l.input(0)
	if kernel = mlKernel(x.DType, f32, f64, i64, i32); kernel == "" {
		return x, "", a, l.NoKernel("input X of %v", x.DType)
	}
	if a, err = read(l.Node); err != nil {
		return x, "", a, l.NoKernel("%v", err)
	}
	return x, kernel, a, nil
}

func lowerLinear(l *lowering) error {
	x := l.input(0)
	kernel := mlKernel(x.DType, kernels.LinearF32, kernels.LinearF64, "", "")
	if kernel == "" {
		return l.NoKernel("input X of %v: the device's linear models take float32 and float64", x.DType)
	}
	var (
		coef, intercepts []float32
		k, features      int
		post             opsem.PostTransform
		flags            int64
		classes          []int64
		width            int
	)
	if l.OpType == "LinearClassifier" {
		c, err := opsem.LinearClassifierOf(l.Node)
		if err != nil {
			return l.NoKernel("%v", err) // the host reports it
		}
		if c.Labels.Ints == nil {
			return l.NoKernel("string labels: the device holds no strings")
		}
		coef, intercepts, k, features, post = c.Coefficients, c.Intercepts, c.Classes, c.Features, c.Post
		flags, classes, width = kernels.LINEAR_CLASSIFIER, c.Labels.Ints, c.ScoreWidth()
		if c.Binary {
			flags |= kernels.LINEAR_BINARY
		}
	} else {
		r, err := opsem.LinearRegressorOf(l.Node)
		if err != nil {
			return l.NoKernel("%v", err)
		}
		coef, intercepts, k, features, post, width = r.Coefficients, r.Intercepts, r.Targets, r.Features, r.Post, r.Targets
	}
	rows, cols, err := mlMatrix(l, x)
	if err != nil {
		return err
	}
	if cols != features {
		return l.NoKernel("X is %v%v for %d features", x.DType, x.Shape, features) // the host reports it
	}
	var z, labels operand
	if flags&kernels.LINEAR_CLASSIFIER != 0 {
		if len(l.Out) > 0 && l.Out[0].Present() {
			if err := checkOut(l, 0, inference.Int64, []int{rows}); err != nil {
				return err
			}
			labels = l.Out[0]
		}
		if len(l.Out) > 1 && l.Out[1].Present() {
			if err := checkOut(l, 1, inference.Float32, []int{rows, width}); err != nil {
				return err
			}
			z = l.Out[1]
		}
	} else {
		if err := checkOut(l, 0, inference.Float32, []int{rows, width}); err != nil {
			return err
		}
		z = l.Out[0]
	}
	if rows == 0 {
		return nil
	}
	coefs, err := mlConstant(l, "coefficients", coef)
	if err != nil {
		return err
	}
	var icpts, classOps operand
	if intercepts != nil {
		if icpts, err = mlConstant(l, "intercepts", intercepts); err != nil {
			return err
		}
	}
	if classes != nil {
		if classOps, err = mlConstant(l, "classes", classes); err != nil {
			return err
		}
	}
	scores := l.Scratch(inference.Float64, []int{rows, width})
	return l.Launch(kernel, int64(rows), ptrArg(x), intArg(rows), intArg(features), ptrArg(coefs), optionalArg(icpts), intArg(k),
		intArg(treeTransforms[post]), intArg(flags), optionalArg(classOps), ptrArg(scores), intArg(width), optionalArg(z), optionalArg(labels))
}

// mlFeatures is the size of x's last axis, checking that the node's
// values per feature number one or that many.
func mlFeatures(l *lowering, x operand, values int) (int, error) {
	if x.Rank() == 0 {
		return 0, l.NoKernel("input X is a scalar") // the host reports it
	}
	features := x.Shape[x.Rank()-1]
	if values != 1 && values != features {
		return 0, l.NoKernel("%d values for %d features", values, features)
	}
	return features, nil
}

func lowerScaler(l *lowering) error {
	x, kernel, s, err := mlNode(l, opsem.ScalerOf, kernels.ScalerF32, kernels.ScalerF64, kernels.ScalerI64, kernels.ScalerI32)
	if err != nil {
		return err
	}
	features, err := mlFeatures(l, x, len(s.Scale))
	if err != nil {
		return err
	}
	if err := checkOut(l, 0, inference.Float32, x.Shape); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	offset, err := mlConstant(l, "offset", s.Offset)
	if err != nil {
		return err
	}
	scale, err := mlConstant(l, "scale", s.Scale)
	if err != nil {
		return err
	}
	return l.Launch(kernel, int64(x.Len()), ptrArg(x), ptrArg(l.Out[0]), intArg(x.Len()), intArg(features),
		ptrArg(offset), ptrArg(scale), intArg(len(s.Scale)))
}

// The kernel's codes of the Normalizer's norms.
var mlNorms = map[int]int64{opsem.NormMax: kernels.NORM_MAX, opsem.NormL1: kernels.NORM_L1, opsem.NormL2: kernels.NORM_L2}

func lowerNormalizer(l *lowering) error {
	x, kernel, z, err := mlNode(l, opsem.NormalizerOf, kernels.NormalizerF32, kernels.NormalizerF64, kernels.NormalizerI64, kernels.NormalizerI32)
	if err != nil {
		return err
	}
	rows, cols, err := mlMatrix(l, x)
	if err != nil {
		return err
	}
	if err := checkOut(l, 0, inference.Float32, x.Shape); err != nil {
		return err
	}
	return l.Launch(kernel, int64(rows), ptrArg(x), ptrArg(l.Out[0]), intArg(rows), intArg(cols), intArg(mlNorms[z.Norm]))
}

func lowerBinarizer(l *lowering) error {
	x, kernel, b, err := mlNode(l, opsem.BinarizerOf, kernels.BinarizerF32, kernels.BinarizerF64, kernels.BinarizerI64, kernels.BinarizerI32)
	if err != nil {
		return err
	}
	if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	return l.Launch(kernel, int64(x.Len()), ptrArg(x), ptrArg(l.Out[0]), intArg(x.Len()), floatArg(float64(b.Threshold)))
}

func lowerImputer(l *lowering) error {
	x, kernel, m, err := mlNode(l, opsem.ImputerOf, kernels.ImputerF32, kernels.ImputerF64, kernels.ImputerI64, kernels.ImputerI32)
	if err != nil {
		return err
	}
	features, err := mlFeatures(l, x, m.Values())
	if err != nil {
		return err
	}
	floatX := x.DType == inference.Float32 || x.DType == inference.Float64
	if floatX && len(m.Floats) == 0 || !floatX && len(m.Ints) == 0 {
		return l.NoKernel("input X of %v, imputed values of the other kind", x.DType) // the host reports it
	}
	if err := checkOut(l, 0, x.DType, x.Shape); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	// The imputed values and the replaced one, in x's type, as the CPU
	// backend converts them (an int32 x whose values do not fit is the
	// host's to report).
	var values, replaced operand
	switch x.DType {
	case inference.Float32:
		values, replaced, err = mlImputed(l, m.Floats, m.ReplacedFloat)
	case inference.Float64:
		values, replaced, err = mlImputed(l, convertAll(m.Floats, func(v float32) float64 { return float64(v) }), float64(m.ReplacedFloat))
	case inference.Int64:
		values, replaced, err = mlImputed(l, m.Ints, m.ReplacedInt)
	case inference.Int32:
		for _, v := range m.Ints {
			if v != int64(int32(v)) {
				return l.NoKernel("imputed value %d out of int32's range", v)
			}
		}
		values, replaced, err = mlImputed(l, convertAll(m.Ints, func(v int64) int32 { return int32(v) }), int32(m.ReplacedInt))
	}
	if err != nil {
		return err
	}
	nan := int64(0)
	if floatX && math.IsNaN(float64(m.ReplacedFloat)) {
		nan = 1
	}
	return l.Launch(kernel, int64(x.Len()), ptrArg(x), ptrArg(l.Out[0]), intArg(x.Len()), intArg(features),
		ptrArg(values), intArg(m.Values()), ptrArg(replaced), intArg(nan))
}

// mlImputed makes an Imputer's values and its replaced value plan
// constants.
func mlImputed[T inference.Element](l *lowering, values []T, replaced T) (v, r operand, err error) {
	if v, err = mlConstant(l, "imputed", values); err == nil {
		r, err = mlConstant(l, "replaced", []T{replaced})
	}
	return v, r, err
}

// convertAll converts each value of vs with conv.
func convertAll[V, T any](vs []V, conv func(V) T) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = conv(v)
	}
	return out
}

//go:build cgo

package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
)

// mlNodeGraph is a graph of one ai.onnx.ml node on input x of dtype and
// rank 2 (rows and features dynamic) or 1 (features, of which there are
// 4: a rank-1 input has no batch dimension), with the outputs outs (a ""
// output is absent).
func mlNodeGraph(op string, attrs map[string]graph.Attr, x inference.DType, rank int, outs ...string) func() *graph.Graph {
	return func() *graph.Graph {
		shape := []int{inference.Dynamic, inference.Dynamic}
		if rank == 1 {
			shape = []int{4}
		}
		n := &graph.Node{Name: op, OpType: op, Domain: cpu.MLDomain, Attrs: attrs, Inputs: []string{"x"}, Outputs: outs}
		g := &graph.Graph{Name: op, Opsets: map[string]int64{"": 21, cpu.MLDomain: 3}, Initializers: map[string]inference.Tensor{},
			Inputs: []graph.Value{{Name: "x", DType: x, Shape: shape}}, Nodes: []*graph.Node{n}}
		for _, o := range outs {
			if o != "" {
				g.Outputs = append(g.Outputs, graph.Value{Name: o})
			}
		}
		if err := g.Sort(nil); err != nil {
			panic(err)
		}
		return g
	}
}

// mlInput is x of dtype and shape: values from values (integers rounded
// toward zero), with the replaced value of an Imputer among them.
func mlInput(t *testing.T, rng *rand.Rand, dtype inference.DType, shape []int, values []float32) inference.Tensor {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	pick := func() float32 { return values[rng.IntN(len(values))] }
	var x inference.Tensor
	var err error
	switch dtype {
	case inference.Float32:
		d := make([]float32, n)
		for i := range d {
			d[i] = pick()
		}
		x, err = inference.New(shape, d)
	case inference.Float64:
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(pick())
			if rng.IntN(4) == 0 && !math.IsInf(d[i], 0) {
				d[i] += 1e-9 // between two float32s
			}
		}
		x, err = inference.New(shape, d)
	case inference.Int64:
		d := make([]int64, n)
		for i := range d {
			d[i] = int64(rng.IntN(21) - 10)
		}
		x, err = inference.New(shape, d)
	case inference.Int32:
		d := make([]int32, n)
		for i := range d {
			d[i] = int32(rng.IntN(21) - 10)
		}
		x, err = inference.New(shape, d)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// oneLaunch wants exactly one launch, of kernel.
func oneLaunch(kernel string) func(map[string]int) bool {
	return func(launched map[string]int) bool { return len(launched) == 1 && launched[kernel] == 1 }
}

func randFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

var mlXTypes = []inference.DType{inference.Float32, inference.Float64, inference.Int64, inference.Int32}

// typeSuffix is a kernel's suffix for x's type.
func typeSuffix(x inference.DType) string {
	return map[inference.DType]string{inference.Float32: "f32", inference.Float64: "f64", inference.Int64: "i64", inference.Int32: "i32"}[x]
}

// The linear models on the simulated device against the CPU backend:
// LinearRegressor with one and three targets, with and without
// intercepts; LinearClassifier with one row of coefficients (with two
// labels, the binary (1 − s, s) scores, or none) and with several classes;
// each post transform; float32 and float64 rows with NaN and infinities;
// label or scores unused. One launch a node. Both backends sum the
// products in feature order in float64: without a post transform the
// scores are equal; the transforms' exp and log are the C library's,
// within an ulp of Go's (treeRTol).
func TestLinearModelsMatchCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	values := treeValues(rng)
	for _, x := range xTypes {
		for _, post := range postTransforms {
			for _, targets := range []int{1, 3} {
				for _, icpt := range []bool{false, true} {
					features := 1 + rng.IntN(6)
					attrs := map[string]graph.Attr{"coefficients": aFloats(randFloats(rng, targets*features)...),
						"targets": aInt(int64(targets)), "post_transform": aStr(post)}
					if icpt {
						attrs["intercepts"] = aFloats(randFloats(rng, targets)...)
					}
					name := fmt.Sprintf("LinearRegressor/%v/%s/targets=%d/intercepts=%v", x, post, targets, icpt)
					t.Run(name, func(t *testing.T) {
						mlCase(t, mlNodeGraph("LinearRegressor", attrs, x, 2, "y"), mlInput(t, rng, x, []int{9, features}, values),
							post == "NONE", oneLaunch("linear_"+typeSuffix(x)), "one linear_*")
					})
				}
			}
			for _, classes := range []int{1, 4} {
				for _, labels := range []int{0, 2} {
					if classes > 1 && labels == 0 || classes == 1 && labels == 2 && post == "PROBIT" {
						continue // a classifier of several classes has their labels; PROBIT with two labels is unsupported
					}
					if classes > 1 {
						labels = classes
					}
					for _, outs := range [][]string{{"label", "z"}, {"", "z"}, {"label", ""}} {
						features := 1 + rng.IntN(6)
						ls := make([]int64, labels)
						for i := range ls {
							ls[i] = int64(10*i + 3)
						}
						attrs := map[string]graph.Attr{"coefficients": aFloats(randFloats(rng, classes*features)...),
							"intercepts": aFloats(randFloats(rng, classes)...), "post_transform": aStr(post)}
						if labels > 0 {
							attrs["classlabels_ints"] = aInts(ls...)
						}
						name := fmt.Sprintf("LinearClassifier/%v/%s/classes=%d/labels=%d/outputs=%q", x, post, classes, labels, outs)
						t.Run(name, func(t *testing.T) {
							mlCase(t, mlNodeGraph("LinearClassifier", attrs, x, 2, outs...), mlInput(t, rng, x, []int{9, features}, values),
								post == "NONE", oneLaunch("linear_"+typeSuffix(x)), "one linear_*")
						})
					}
				}
			}
		}
	}
}

// Scaler, Normalizer, Binarizer and Imputer on the simulated device
// against the CPU backend, on every input type the kernels take, with one
// value or one per feature, rows of rank 1 and 2, NaN and infinities:
// equal outputs, one launch a node.
func TestFeatureTransformsMatchCPU(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	values := append(treeValues(rng), 7, 7, 7) // 7: an Imputer's replaced value
	for _, x := range mlXTypes {
		for _, rank := range []int{1, 2} {
			shape := []int{5, 4}[2-rank:]
			for _, perFeature := range []bool{false, true} {
				n := 1
				if perFeature {
					n = 4
				}
				t.Run(fmt.Sprintf("Scaler/%v/rank=%d/values=%d", x, rank, n), func(t *testing.T) {
					attrs := map[string]graph.Attr{"offset": aFloats(randFloats(rng, n)...), "scale": aFloats(randFloats(rng, n)...)}
					mlCase(t, mlNodeGraph("Scaler", attrs, x, rank, "y"), mlInput(t, rng, x, shape, values), true,
						oneLaunch("scaler_"+typeSuffix(x)), "one scaler_*")
				})
				t.Run(fmt.Sprintf("Imputer/%v/rank=%d/values=%d", x, rank, n), func(t *testing.T) {
					attrs := map[string]graph.Attr{}
					if x == inference.Float32 || x == inference.Float64 {
						attrs["imputed_value_floats"] = aFloats(randFloats(rng, n)...)
						attrs["replaced_value_float"] = graph.Attr{Type: graph.AttrFloat, Float: 7}
						if perFeature {
							attrs["replaced_value_float"] = graph.Attr{Type: graph.AttrFloat, Float: float32(math.NaN())}
						}
					} else {
						ints := make([]int64, n)
						for i := range ints {
							ints[i] = int64(100 + i)
						}
						attrs["imputed_value_int64s"] = aInts(ints...)
						attrs["replaced_value_int64"] = aInt(int64(rng.IntN(5) - 2))
					}
					mlCase(t, mlNodeGraph("Imputer", attrs, x, rank, "y"), mlInput(t, rng, x, shape, values), true,
						oneLaunch("imputer_"+typeSuffix(x)), "one imputer_*")
				})
			}
			for _, norm := range []string{"MAX", "L1", "L2"} {
				t.Run(fmt.Sprintf("Normalizer/%v/rank=%d/%s", x, rank, norm), func(t *testing.T) {
					attrs := map[string]graph.Attr{"norm": aStr(norm)}
					mlCase(t, mlNodeGraph("Normalizer", attrs, x, rank, "y"), mlInput(t, rng, x, shape, values), true,
						oneLaunch("normalizer_"+typeSuffix(x)), "one normalizer_*")
				})
			}
			t.Run(fmt.Sprintf("Binarizer/%v/rank=%d", x, rank), func(t *testing.T) {
				attrs := map[string]graph.Attr{"threshold": graph.Attr{Type: graph.AttrFloat, Float: float32(rng.NormFloat64())}}
				mlCase(t, mlNodeGraph("Binarizer", attrs, x, rank, "y"), mlInput(t, rng, x, shape, values), true,
					oneLaunch("binarizer_"+typeSuffix(x)), "one binarizer_*")
			})
		}
	}
}

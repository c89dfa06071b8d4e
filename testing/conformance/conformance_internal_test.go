package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// suites is ONNX's backend test data, in the repository (testdata/README.md).
var suites = "testdata"

// requiredOps are the operators the ONNX issue names: every node test that
// uses one of them must pass.
var requiredOps = strings.Fields(`Conv ConvTranspose MaxPool AveragePool GlobalAveragePool
	BatchNormalization InstanceNormalization LRN Gemm MatMul Add Sub Mul Div Pow Sqrt Exp Log
	Neg Abs Sign Max Min Sum Relu LeakyRelu PRelu Elu Selu Sigmoid HardSigmoid Tanh Softplus
	Softsign Shrink Clip Softmax LogSoftmax Flatten Reshape Transpose Concat Split Slice Squeeze
	Unsqueeze Gather Tile Pad ReduceMean ReduceSum ReduceMax Constant ConstantOfShape Shape
	Identity Dropout LayerNormalization Erf Gelu Where Equal Expand Cast`)

// TestConformanceCPU runs every suite on the CPU backend. It fails on any
// FAIL, on an UNSUPPORTED line that does not name its operator, on a test
// of a required operator that does not pass, unless what is missing is an
// element type (Result.Type: one a Tensor does not hold, or one the
// operator's kernel does not compute yet), and when fewer than
// 75% of the node tests or 95% of the model tests (pytorch-converted,
// pytorch-operator, simple) pass.
func TestConformanceCPU(t *testing.T) {
	if _, err := os.Stat(suites); err != nil {
		t.Fatalf("conformance data not found at %s: %v", suites, err)
	}
	backend, err := inference.ResolveDevice(inference.CPU)
	if err != nil {
		t.Fatal(err)
	}
	ops := manifestOps(t)
	passed := map[string]int{}
	totals := map[string]int{}
	for _, suite := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			var out bytes.Buffer
			sum, err := RunAll(&out, filepath.Join(suites, suite), backend, nil)
			if err != nil {
				t.Fatal(err)
			}
			total := sum.Passed + sum.Failed + sum.Skipped
			if total == 0 {
				t.Fatal("no tests found")
			}
			for _, r := range sum.Results {
				switch {
				case r.Status == Fail:
					t.Errorf("%v", r)
				case r.Status == Unsupported && r.Op == "":
					t.Errorf("%v: UNSUPPORTED without an operator", r)
				}
				name := suite + "/" + r.Name
				if r.Status != Pass && !r.Type {
					for _, op := range ops[name] {
						if slices.Contains(requiredOps, op) {
							t.Errorf("%s uses required operator %s and does not pass: %v", name, op, r)
							break
						}
					}
				}
			}
			passed[suite], totals[suite] = sum.Passed, total
			t.Logf("%s: %d passed, %d failed, %d unsupported of %d (%.1f%% pass)",
				suite, sum.Passed, sum.Failed, sum.Skipped, total, 100*float64(sum.Passed)/float64(total))
		})
	}
	if p, n := passed["node"], totals["node"]; 4*p < 3*n {
		t.Errorf("node: %d of %d pass, want at least 75%%", p, n)
	}
	mp := passed["pytorch-converted"] + passed["pytorch-operator"] + passed["simple"]
	mn := totals["pytorch-converted"] + totals["pytorch-operator"] + totals["simple"]
	if 100*mp < 95*mn {
		t.Errorf("model suites: %d of %d pass, want at least 95%%", mp, mn)
	}
}

// How closely the CPU backend's outputs with and without its optimising
// graph passes must agree: ten times tighter than the suites' tolerance.
// The passes change only the rounding: BatchNormalization folded into the
// weights, a LayerNormalization or Gelu computed in float64 and rounded
// once where its decomposition rounds each step.
const (
	passesRtol = 1e-4
	passesAtol = 1e-5
)

// TestConformancePassesOnOff runs every model of every suite on the CPU
// backend with its optimising passes and without them (cpu.Backend's
// Unoptimized) and requires the same outcome and, data set by data set,
// the same outputs within passesRtol and passesAtol, besides the expected
// outputs each run is compared with.
func TestConformancePassesOnOff(t *testing.T) {
	if _, err := os.Stat(suites); err != nil {
		t.Fatalf("conformance data not found at %s: %v", suites, err)
	}
	optimized, plain := cpu.Backend{}, cpu.Backend{Unoptimized: true}
	for _, suite := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			dir := filepath.Join(suites, suite)
			tests, err := testDirs(dir)
			if err != nil {
				t.Fatal(err)
			}
			compared, differ := 0, 0
			for _, test := range tests {
				name := testName(dir, test)
				on, got := runTestOutputs(test, optimized, nil)
				off, want := runTestOutputs(test, plain, nil)
				if on.Status != off.Status {
					t.Errorf("%s: %v with the passes, %v without", name, on, off)
					continue
				}
				exact := true
				for set, outs := range want {
					for out, w := range outs {
						g := got[set][out]
						if msg := compareWithin(g, w, passesRtol, passesAtol); msg != "" {
							t.Errorf("%s %s output %q: with the passes against without: %s", name, set, out, msg)
						}
						exact = exact && inference.Equal(g, w)
						compared++
					}
				}
				if !exact {
					differ++
				}
			}
			t.Logf("%s: %d outputs of %d models compared; %d models' outputs not bit-identical", suite, compared, len(tests), differ)
		})
	}
}

// runTestOutputs is runTestWithin returning the outputs of each data set
// it ran, by data set and output name.
func runTestOutputs(dir string, b inference.Backend, tol tolerance) (Result, map[string]map[string]inference.Tensor) {
	outs := map[string]map[string]inference.Tensor{}
	r := runTestWithin(dir, b, func(set string, o map[string]inference.Tensor) { outs[set] = o }, false, tol)
	return r, outs
}

// TestConformanceReusedBuffers runs every model of every suite on the CPU
// backend with each data set preceded by a run on NaN-filled float inputs
// (runTest's primed): the checked run computes in buffers the pool hands
// out again, and must still pass whatever passes on fresh ones. A kernel
// that does not write all of an output it asked for uncleared
// (limit.MakeOverwritten) fails here.
func TestConformanceReusedBuffers(t *testing.T) {
	if _, err := os.Stat(suites); err != nil {
		t.Fatalf("conformance data not found at %s: %v", suites, err)
	}
	for _, suite := range []string{"node", "pytorch-converted", "pytorch-operator", "simple"} {
		t.Run(suite, func(t *testing.T) {
			dir := filepath.Join(suites, suite)
			tests, err := testDirs(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, test := range tests {
				fresh := runTest(test, cpu.Backend{}, nil, false)
				reused := runTest(test, cpu.Backend{}, nil, true)
				if fresh.Status != reused.Status {
					t.Errorf("%s: %v on fresh buffers, %v on reused ones", testName(dir, test), fresh, reused)
				}
			}
		})
	}
}

// manifestOps reads MANIFEST.tsv: the operators each test uses, by
// "suite/name".
func manifestOps(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suites, "MANIFEST.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Split(line, "\t")
		if len(f) > 2 {
			ops[f[0]+"/"+f[1]] = strings.Split(f[2], ",")
		}
	}
	if len(ops) < 1000 {
		t.Fatalf("MANIFEST.tsv lists %d tests", len(ops))
	}
	return ops
}

// TestUnsupportedGraphTypeIsUnsupported: a model whose graph input, output
// or initializer has an element type a Tensor does not hold is UNSUPPORTED
// (Type set), naming the operator that reads the value (an output's writer;
// the first node for a value nothing reads) and the value and its type,
// not FAIL. COMPLEX64 stands for any such type: the runtime will not hold
// it soon.
func TestUnsupportedGraphTypeIsUnsupported(t *testing.T) {
	const complex64 = int32(onnxpb.TensorProto_COMPLEX64)
	tensor := func(name string, elem int32) *onnxpb.ValueInfoProto {
		return &onnxpb.ValueInfoProto{Name: name, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: elem}}}}
	}
	float := int32(onnxpb.TensorProto_FLOAT)
	for _, tc := range []struct {
		name       string
		graph      *onnxpb.GraphProto
		op, detail string
	}{
		{"input", &onnxpb.GraphProto{
			Node:   []*onnxpb.NodeProto{{OpType: "Relu", Input: []string{"a"}, Output: []string{"b"}}, {OpType: "Abs", Input: []string{"x"}, Output: []string{"y"}}},
			Input:  []*onnxpb.ValueInfoProto{tensor("a", float), tensor("x", complex64)},
			Output: []*onnxpb.ValueInfoProto{tensor("b", float), tensor("y", float)},
		}, "Abs", `graph input "x": element type COMPLEX64 (14)`},
		{"output", &onnxpb.GraphProto{
			Node:   []*onnxpb.NodeProto{{OpType: "Cast", Domain: "ai.onnx", Input: []string{"x"}, Output: []string{"y"}}},
			Input:  []*onnxpb.ValueInfoProto{tensor("x", float)},
			Output: []*onnxpb.ValueInfoProto{tensor("y", complex64)},
		}, "Cast", `graph output "y": element type COMPLEX64 (14)`},
		{"unread input", &onnxpb.GraphProto{
			Node:   []*onnxpb.NodeProto{{OpType: "LabelEncoder", Domain: "ai.onnx.ml", Input: []string{"x"}, Output: []string{"y"}}},
			Input:  []*onnxpb.ValueInfoProto{tensor("x", float), tensor("like", complex64)},
			Output: []*onnxpb.ValueInfoProto{tensor("y", float)},
		}, "ai.onnx.ml.LabelEncoder", `graph input "like": element type COMPLEX64 (14)`},
		{"initializer", &onnxpb.GraphProto{
			Node:        []*onnxpb.NodeProto{{OpType: "Add", Input: []string{"x", "w"}, Output: []string{"y"}}},
			Initializer: []*onnxpb.TensorProto{{Name: "w", DataType: complex64, Dims: []int64{1}, RawData: make([]byte, 8)}},
			Input:       []*onnxpb.ValueInfoProto{tensor("x", float)},
			Output:      []*onnxpb.ValueInfoProto{tensor("y", float)},
		}, "Add", `initializer "w": element type COMPLEX64 (14)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, err := proto.Marshal(&onnxpb.ModelProto{IrVersion: 8, Graph: tc.graph, OpsetImport: []*onnxpb.OperatorSetIdProto{
				{Version: 17}, {Domain: "ai.onnx.ml", Version: 3}}})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "model.onnx"), model, 0o644); err != nil {
				t.Fatal(err)
			}
			r := RunTest(dir, cpu.Backend{})
			if r.Status != Unsupported || r.Op != tc.op || r.Detail != tc.detail || !r.Type {
				t.Errorf("got %v (Type %v), want UNSUPPORTED: op %s (%s), Type true", r, r.Type, tc.op, tc.detail)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	f := func(v ...float32) inference.Tensor {
		x, err := inference.New([]int{len(v)}, v)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	h := func(v ...inference.Half) inference.Tensor {
		x, err := inference.New([]int{len(v)}, v)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	nan := float32(0)
	nan = nan / nan
	for _, tc := range []struct {
		got, want inference.Tensor
		ok        bool
	}{
		{f(1, 2), f(1, 2), true},
		{f(1.0009), f(1), true},  // within atol 1e-4 + rtol 1e-3
		{f(1.0012), f(1), false}, // outside
		{f(nan), f(nan), true},   // NaN matches NaN
		{f(1, 2), f(1, 2, 3), false},
		{h(0x4000), h(0x4000), true},  // float16: 2 and 2
		{h(0x7e00), h(0x7e01), true},  // NaN and NaN
		{h(0x3c01), h(0x3c00), true},  // 1+2⁻¹⁰ and 1: within atol 1e-4 + rtol 1e-3
		{h(0x3c02), h(0x3c00), false}, // 1+2⁻⁹ and 1: outside
		{h(0x3c00), f(1), false},      // float16 and float32
	} {
		if got := Compare(tc.got, tc.want) == ""; got != tc.ok {
			t.Errorf("Compare(%v, %v) ok = %v, want %v", tc.got, tc.want, got, tc.ok)
		}
	}
}

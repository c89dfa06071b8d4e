// Command conformance runs ONNX backend tests: every folder under --dir
// that holds a model.onnx and test_data_set_N folders of input_K.pb and
// output_K.pb TensorProtos (the layout of ONNX's onnx/backend/test/data).
//
//	go run ./testing/conformance --dir testing/conformance/testdata [--device cpu|cuda|sim] [--run REGEXP] [--optimize=false]
//
// --device sim runs the CUDA backend's executor on the simulated device:
// the host-emulated CUDA kernels and a Go GEMM (needs cgo). It is how the
// GPU path is checked on machines without a GPU. --optimize=false runs the
// CPU backend without its optimising graph passes (constant folding only:
// cpu.Backend's Unoptimized), each node as the model wrote it.
//
// It prints one line per test, "NAME: PASS", "NAME: FAIL: why" or
// "NAME: UNSUPPORTED: op X (detail)", and ends with "N passed, N failed, N
// skipped". Outputs are compared as the suite's README says: same shape and
// element type, and |got - want| <= atol + rtol·|want| with rtol 1e-3 and
// atol 1e-4 for float32 and float16 (NaN equals NaN); integers and bools
// exactly. It
// exits 1 when a test fails, 2 when the device is not available.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// Tolerances for float32 outputs, from the suite's README.
const (
	rtol = 1e-3
	atol = 1e-4
)

func main() {
	dir := flag.String("dir", "", "folder of tests (searched recursively for model.onnx)")
	device := flag.String("device", "cpu", "cpu, cuda, or sim (the CUDA executor on the simulated device)")
	filter := flag.String("run", "", "only tests whose path matches this regular expression")
	optimize := flag.Bool("optimize", true, "run the CPU backend's optimising graph passes (false: constant folding only)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "conformance: --dir is required")
		os.Exit(2)
	}
	var re *regexp.Regexp
	if *filter != "" {
		var err error
		if re, err = regexp.Compile(*filter); err != nil {
			fmt.Fprintf(os.Stderr, "conformance: --run: %v\n", err)
			os.Exit(2)
		}
	}
	backend, err := resolve(*device)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		os.Exit(2)
	}
	if !*optimize {
		if *device != string(inference.CPU) {
			fmt.Fprintln(os.Stderr, "conformance: --optimize=false needs --device cpu")
			os.Exit(2)
		}
		backend = cpu.Backend{Unoptimized: true}
	}
	sum, err := RunAll(os.Stdout, *dir, backend, re)
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: %v\n", err)
		os.Exit(2)
	}
	if sum.Failed > 0 {
		os.Exit(1)
	}
}

// simBackend returns the CUDA backend on the simulated device; set by
// sim.go in builds with cgo.
var simBackend func() (inference.Backend, error)

func resolve(device string) (inference.Backend, error) {
	if device != "sim" {
		return inference.ResolveDevice(inference.Device(device))
	}
	if simBackend == nil {
		return nil, fmt.Errorf("device sim runs the emulated CUDA kernels and needs cgo (CGO_ENABLED=1 and a C++ compiler): %w", inference.ErrNoDevice)
	}
	return simBackend()
}

// Status is a test's outcome.
type Status string

const (
	Pass        Status = "PASS"
	Fail        Status = "FAIL"
	Unsupported Status = "UNSUPPORTED"
)

// Result is one test's outcome; Detail says why for FAIL and UNSUPPORTED,
// and Op names the missing operator for UNSUPPORTED.
type Result struct {
	Name   string
	Status Status
	Op     string
	Detail string
	// Type: what is missing is an element type (Detail names it), where
	// Op is the operator that reads or writes the value of that type.
	Type bool
	// hostOps lists the nodes run on the host (nil for the CPU backend).
	hostOps *[]string
	// fallback says why the whole model ran on the CPU backend, where a
	// GPU backend sent it there (control flow, sequences).
	fallback string
}

func (r Result) String() string {
	switch r.Status {
	case Pass:
		return r.Name + ": PASS"
	case Unsupported:
		return fmt.Sprintf("%s: UNSUPPORTED: op %s%s", r.Name, r.Op, parens(r.Detail))
	}
	return fmt.Sprintf("%s: FAIL: %s", r.Name, r.Detail)
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Summary counts results.
type Summary struct {
	Passed, Failed, Skipped int
	Results                 []Result
	// For backends that can run nodes on the host (cuda, sim): passing
	// tests that ran every node on the device, and host nodes by operator.
	OnDevice int
	HostOps  map[string]int
}

// hostReporter is a model that may run some nodes on the host.
type hostReporter interface{ HostNodes() []string }

// RunAll runs every test under dir whose path matches re (nil: all), prints
// a line per test and the closing counts to w, and returns them.
func RunAll(w io.Writer, dir string, backend inference.Backend, re *regexp.Regexp) (Summary, error) {
	var sum Summary
	tests, err := testDirs(dir)
	if err != nil {
		return sum, err
	}
	for _, t := range tests {
		name := testName(dir, t)
		if re != nil && !re.MatchString(name) {
			continue
		}
		r := RunTest(t, backend)
		r.Name = name
		if r.Status == Pass && r.hostOps != nil {
			if sum.HostOps == nil {
				sum.HostOps = map[string]int{}
			}
			if len(*r.hostOps) == 0 {
				sum.OnDevice++
			}
			for _, op := range *r.hostOps {
				sum.HostOps[op]++
			}
		}
		fmt.Fprintln(w, r)
		sum.Results = append(sum.Results, r)
		switch r.Status {
		case Pass:
			sum.Passed++
		case Fail:
			sum.Failed++
		default:
			sum.Skipped++
		}
	}
	if len(sum.HostOps) > 0 || sum.OnDevice > 0 {
		ops := slices.Sorted(maps.Keys(sum.HostOps))
		slices.SortStableFunc(ops, func(a, b string) int { return sum.HostOps[b] - sum.HostOps[a] })
		var list []string
		for _, op := range ops {
			list = append(list, fmt.Sprintf("%s %d", op, sum.HostOps[op]))
		}
		fmt.Fprintf(w, "device: %d of %d passing tests ran every node on the device; nodes run on the host, by operator: %s\n",
			sum.OnDevice, sum.Passed, strings.Join(list, ", "))
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", sum.Passed, sum.Failed, sum.Skipped)
	return sum, nil
}

// testDirs returns the folders under dir that hold a model.onnx, sorted.
func testDirs(dir string) ([]string, error) {
	var tests []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "model.onnx" {
			tests = append(tests, filepath.Dir(path))
		}
		return nil
	})
	sort.Strings(tests)
	return tests, err
}

// testName is the name of the test in folder t under dir: its path from
// dir, with slashes.
func testName(dir, t string) string {
	name, _ := filepath.Rel(dir, t)
	if name == "." {
		name = filepath.Base(t)
	}
	return filepath.ToSlash(name)
}

// RunTest loads one test's model onto backend and runs every data set.
func RunTest(dir string, backend inference.Backend) Result {
	return runTest(dir, backend, nil, false)
}

// runTest is RunTest, calling seen (when not nil) with each data set's
// outputs before it compares them with the expected ones. With primed,
// each data set first runs once with its float32 inputs filled with NaN
// (the result ignored), so that the run that is checked reuses buffers a
// run that computed other values left behind: a kernel that leaves part
// of a reused buffer unwritten shows there.
func runTest(dir string, backend inference.Backend, seen func(set string, outs map[string]inference.Tensor), primed bool) (r Result) {
	return runTestWithin(dir, backend, seen, primed, nil)
}

// tolerance gives a test's float32 tolerances from its graph, as decoded.
type tolerance func(g *graph.Graph) (rtol, atol float64)

// runTestWithin is runTest comparing floats within tol's tolerances (nil:
// the package's rtol and atol).
func runTestWithin(dir string, backend inference.Backend, seen func(set string, outs map[string]inference.Tensor), primed bool, tol tolerance) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Status: Fail, Detail: fmt.Sprintf("panic: %v", p)}
		}
	}()
	verdict := func(err error) Result {
		var u *inference.UnsupportedOpError
		if errors.As(err, &u) {
			return Result{Status: Unsupported, Op: u.Op, Detail: u.Detail, Type: u.Type}
		}
		return Result{Status: Fail, Detail: err.Error()}
	}
	data, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return Result{Status: Fail, Detail: err.Error()}
	}
	g, err := onnx.Decode(data, dir)
	if err != nil {
		if errors.Is(err, inference.ErrUnsupportedType) {
			if op, detail := unsupportedValue(data); op != "" {
				return Result{Status: Unsupported, Op: op, Detail: detail, Type: true}
			}
		}
		return verdict(err)
	}
	rt, at := rtol, atol
	if tol != nil {
		rt, at = tol(g)
	}
	c, ok := backend.(graph.Compiler)
	if !ok {
		return Result{Status: Fail, Detail: fmt.Sprintf("backend %s does not run graphs", backend.Device())}
	}
	model, err := c.Compile(g)
	if err != nil {
		return verdict(err)
	}
	defer model.Close()
	var hostOps *[]string
	if h, ok := model.(hostReporter); ok {
		defer func() { ops := h.HostNodes(); hostOps = &ops; r.hostOps = hostOps }()
	}
	if f, ok := model.(interface{ Fallback() string }); ok && f.Fallback() != "" {
		defer func() { r.fallback = f.Fallback() }()
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return Result{Status: Fail, Detail: "no test_data_set_N folder"}
	}
	for _, set := range sets {
		feeds := map[string]inference.Tensor{}
		for k, in := range g.Inputs {
			_, t, err := readTensor(filepath.Join(set, fmt.Sprintf("input_%d.pb", k)))
			if err != nil {
				return verdict(fmt.Errorf("%s input %d: %w", filepath.Base(set), k, err))
			}
			feeds[in.Name] = t
		}
		if primed {
			model.Run(context.Background(), nanFilled(feeds))
		}
		outs, err := model.Run(context.Background(), feeds)
		if err != nil {
			return verdict(err)
		}
		if seen != nil {
			seen(filepath.Base(set), outs)
		}
		for k, o := range g.Outputs {
			path := filepath.Join(set, fmt.Sprintf("output_%d.pb", k))
			var want inference.Tensor
			if o.Labels != nil {
				want, err = readMapOutput(path, o.Labels)
			} else {
				_, want, err = readTensor(path)
			}
			if err != nil {
				return verdict(fmt.Errorf("%s output %d: %w", filepath.Base(set), k, err))
			}
			if msg := compareWithin(outs[o.Name], want, rt, at); msg != "" {
				return Result{Status: Fail, Detail: fmt.Sprintf("%s output %q: %s", filepath.Base(set), o.Name, msg)}
			}
		}
	}
	return Result{Status: Pass}
}

// unsupportedValue explains a model that onnx.Decode refused with
// inference.ErrUnsupportedType outside any node: it finds the first
// initializer, graph input or graph output (in the order Decode checks
// them) of an element type a Tensor does not hold, and returns the
// operator of the first node that reads it (for an output, the node that
// writes it; for a value no node touches, the graph's first node),
// prefixed with its domain outside ai.onnx, and which value has which
// type. op is "" when there is no such value in the main graph, or no node.
func unsupportedValue(model []byte) (op, detail string) {
	var m onnxpb.ModelProto
	if proto.Unmarshal(model, &m) != nil {
		return "", ""
	}
	g := m.GetGraph()
	opOf := func(n *onnxpb.NodeProto) string {
		if n.GetDomain() != "" && n.GetDomain() != "ai.onnx" {
			return n.GetDomain() + "." + n.GetOpType()
		}
		return n.GetOpType()
	}
	find := func(name string, output bool) string {
		for _, n := range g.GetNode() {
			values := n.GetInput()
			if output {
				values = n.GetOutput()
			}
			if slices.Contains(values, name) {
				return opOf(n)
			}
		}
		if len(g.GetNode()) > 0 {
			return opOf(g.GetNode()[0])
		}
		return ""
	}
	typeName := func(code int32) (string, bool) {
		_, ok := inference.DTypeFromONNX(int64(code))
		return inference.ONNXTypeName(int64(code)), !ok
	}
	for _, t := range g.GetInitializer() {
		if name, missing := typeName(t.GetDataType()); missing {
			return find(t.GetName(), false), fmt.Sprintf("initializer %q: element type %s", t.GetName(), name)
		}
	}
	for _, side := range []struct {
		what   string
		values []*onnxpb.ValueInfoProto
	}{{"input", g.GetInput()}, {"output", g.GetOutput()}} {
		for _, vi := range side.values {
			tt := vi.GetType().GetTensorType()
			if tt == nil {
				continue
			}
			if name, missing := typeName(tt.GetElemType()); missing {
				return find(vi.GetName(), side.what == "output"), fmt.Sprintf("graph %s %q: element type %s", side.what, vi.GetName(), name)
			}
		}
	}
	return "", ""
}

// nanFilled returns feeds with every float32 tensor's elements NaN; the
// other element types (indices, masks) keep their values.
func nanFilled(feeds map[string]inference.Tensor) map[string]inference.Tensor {
	out := make(map[string]inference.Tensor, len(feeds))
	for name, t := range feeds {
		out[name] = t
		if d, err := inference.Data[float32](t); err == nil {
			nan := make([]float32, len(d))
			for i := range nan {
				nan[i] = float32(math.NaN())
			}
			out[name], _ = inference.New(t.Shape(), nan)
		}
	}
	return out
}

func readTensor(path string) (string, inference.Tensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", inference.Tensor{}, err
	}
	return onnx.ReadTensor(b)
}

// Compare returns "" when got matches want (see the package doc for the
// rule), and otherwise what differs first.
func Compare(got, want inference.Tensor) string { return compareWithin(got, want, rtol, atol) }

// compareWithin is Compare with float tolerances rtol and atol.
func compareWithin(got, want inference.Tensor, rtol, atol float64) string {
	if got.DType() != want.DType() || !slices.Equal(got.Shape(), want.Shape()) {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	switch want.DType() {
	case inference.Float32, inference.Float16, inference.BFloat16, inference.Float64:
		g, w := floats(got), floats(want)
		for i := range w {
			gi, wi := g[i], w[i]
			if math.IsNaN(wi) && math.IsNaN(gi) {
				continue
			}
			if math.IsInf(wi, 0) && gi == wi {
				continue
			}
			if !(math.Abs(gi-wi) <= atol+rtol*math.Abs(wi)) {
				return fmt.Sprintf("element %d is %g, want %g (rtol %g, atol %g)", i, gi, wi, rtol, atol)
			}
		}
		return ""
	}
	if !inference.Equal(got, want) {
		return fmt.Sprintf("values differ: got %s, want %s", preview(got), preview(want))
	}
	return ""
}

// floats returns a tensor of floats' values as float64.
func floats(t inference.Tensor) []float64 {
	switch t.DType() {
	case inference.Float16:
		return widened(t, inference.Half.Float32)
	case inference.BFloat16:
		return widened(t, inference.BF16.Float32)
	case inference.Float64:
		f, _ := inference.Data[float64](t)
		return f
	}
	return widened(t, func(v float32) float32 { return v })
}

func widened[T inference.Element](t inference.Tensor, f func(T) float32) []float64 {
	d, _ := inference.Data[T](t)
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(f(v))
	}
	return out
}

// preview shows an integer or bool tensor's first values, and other
// tensors as their String does.
func preview(t inference.Tensor) string {
	switch t.DType() {
	case inference.Int64:
		return first10(t, int64(0))
	case inference.Int32:
		return first10(t, int32(0))
	case inference.Uint8:
		return first10(t, uint8(0))
	case inference.Bool:
		return first10(t, false)
	}
	return t.String()
}

// first10 prints the first ten of t's elements, of type T.
func first10[T inference.Element](t inference.Tensor, _ T) string {
	d, _ := inference.Data[T](t)
	if len(d) > 10 {
		return strings.TrimSuffix(fmt.Sprint(d[:10]), "]") + " …]"
	}
	return fmt.Sprint(d)
}

package cpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The limits of a run: the memory budget every kernel allocates under,
// panics returned as errors, deadlines, and zero-element tensors whose
// other dimensions are huge.

// oneNode is a graph of one node reading the graph inputs in and
// writing output y.
func oneNode(t *testing.T, op string, opset int64, attrs map[string]graph.Attr, in ...string) *graph.Graph {
	t.Helper()
	if attrs == nil {
		attrs = map[string]graph.Attr{}
	}
	g := &graph.Graph{Name: "g", Opsets: map[string]int64{"": opset}, Initializers: map[string]inference.Tensor{},
		Outputs: []graph.Value{{Name: "y"}},
		Nodes:   []*graph.Node{{Name: "n", OpType: op, Inputs: in, Outputs: []string{"y"}, Attrs: attrs}}}
	for _, name := range in {
		g.Inputs = append(g.Inputs, graph.Value{Name: name})
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

// runLimited runs g on feeds under a budget, failing the test if the run
// takes longer than a minute (a hang) or panics.
func runLimited(t *testing.T, g *graph.Graph, budget int64, feeds map[string]inference.Tensor) (map[string]inference.Tensor, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(inference.WithMemoryBudget(context.Background(), budget), time.Minute)
	defer cancel()
	type result struct {
		out map[string]inference.Tensor
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := NewModel(g).Run(ctx, feeds)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not return")
		return nil, nil
	}
}

func TestBudgetRefusesBeforeAllocating(t *testing.T) {
	const budget = 64 << 20
	one := tensorOf(t, []int{1}, float32(1))
	for _, tc := range []struct {
		name  string
		g     *graph.Graph
		feeds map[string]inference.Tensor
	}{
		{"Expand to 10^12", oneNode(t, "Expand", 13, nil, "x", "s"),
			map[string]inference.Tensor{"x": one, "s": i64s(t, 1_000_000, 1_000_000)}},
		{"Expand to [2^31-1, 2^31-1]", oneNode(t, "Expand", 13, nil, "x", "s"),
			map[string]inference.Tensor{"x": one, "s": i64s(t, 1<<31-1, 1<<31-1)}},
		{"ConstantOfShape", oneNode(t, "ConstantOfShape", 13, nil, "s"),
			map[string]inference.Tensor{"s": i64s(t, 1_000_000, 1_000_000)}},
		{"Tile", oneNode(t, "Tile", 13, nil, "x", "r"),
			map[string]inference.Tensor{"x": one, "r": i64s(t, 1<<30)}},
		{"Range", oneNode(t, "Range", 13, nil, "a", "b", "d"),
			map[string]inference.Tensor{"a": tensorOf(t, []int{}, int64(0)), "b": tensorOf(t, []int{}, int64(1<<30)), "d": tensorOf(t, []int{}, int64(1))}},
		{"OneHot", oneNode(t, "OneHot", 13, nil, "i", "depth", "v"),
			map[string]inference.Tensor{"i": i64s(t, 1, 2), "depth": tensorOf(t, []int{}, int64(1<<30)), "v": tensorOf(t, []int{2}, float32(0), 1)}},
		{"MatMul outer product", oneNode(t, "MatMul", 13, nil, "a", "b"),
			map[string]inference.Tensor{"a": tensorOf(t, []int{100_000, 1}, make([]float32, 100_000)...), "b": tensorOf(t, []int{1, 100_000}, make([]float32, 100_000)...)}},
		{"Add broadcast", oneNode(t, "Add", 13, nil, "a", "b"),
			map[string]inference.Tensor{"a": tensorOf(t, []int{100_000, 1}, make([]float32, 100_000)...), "b": tensorOf(t, []int{1, 100_000}, make([]float32, 100_000)...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runLimited(t, tc.g, budget, tc.feeds)
			var re *inference.ResourceError
			if !errors.As(err, &re) || !errors.Is(err, inference.ErrResourceExhausted) {
				t.Fatalf("got %v, want an *inference.ResourceError", err)
			}
			if re.Node != `"n" (`+tc.g.Nodes[0].OpType+`)` || re.Model != "g" || re.Budget != budget || (re.Bytes >= 0 && re.Bytes <= budget) {
				t.Errorf("error %+v does not name node, model, budget and size", re)
			}
		})
	}
}

func TestBudgetCountsLiveValuesOnly(t *testing.T) {
	// A chain of 40 Relu over a 4 MiB tensor allocates 160 MiB in all but
	// holds at most two values at once: it runs under a 16 MiB budget.
	const width = 1 << 20
	g := &graph.Graph{Name: "chain", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{},
		Inputs: []graph.Value{{Name: vname(0)}}}
	for i := range 40 {
		g.Nodes = append(g.Nodes, &graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{vname(i)}, Outputs: []string{vname(i + 1)}})
	}
	g.Outputs = []graph.Value{{Name: vname(40)}}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	x := tensorOf(t, []int{width}, make([]float32, width)...)
	if _, err := runLimited(t, g, 16<<20, map[string]inference.Tensor{vname(0): x}); err != nil {
		t.Fatal(err)
	}
	// Held all at once (every value an output), they pass it.
	for i := 1; i < 40; i++ {
		g.Outputs = append(g.Outputs, graph.Value{Name: vname(i)})
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := runLimited(t, g, 16<<20, map[string]inference.Tensor{vname(0): x}); !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("got %v, want ErrResourceExhausted", err)
	}
}

func vname(i int) string { return "v" + string(rune('0'+i/10)) + string(rune('0'+i%10)) }

func TestKernelPanicIsAnError(t *testing.T) {
	kernels["TestPanic"] = func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		var s []int
		_ = s[len(in)+3] // index out of range
		return nil, nil
	}
	kernels["TestWorkerPanic"] = func(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
		parallelFor(1<<20, 1<<20, func(lo, hi int) {
			if lo > 0 {
				panic("worker " + "failed")
			}
		})
		return nil, nil
	}
	defer delete(kernels, "TestPanic")
	defer delete(kernels, "TestWorkerPanic")
	x := tensorOf(t, []int{1}, float32(1))
	for op, want := range map[string]string{"TestPanic": "index out of range", "TestWorkerPanic": "worker failed"} {
		_, err := runLimited(t, oneNode(t, op, 13, nil, "x"), 0, map[string]inference.Tensor{"x": x})
		var pe *inference.PanicError
		if !errors.As(err, &pe) || !errors.Is(err, inference.ErrPanic) {
			t.Fatalf("%s: got %v, want an *inference.PanicError", op, err)
		}
		if !strings.Contains(err.Error(), `"n" (`+op+`)`) || !strings.Contains(err.Error(), want) || len(pe.Frames) == 0 {
			t.Errorf("%s: error %q does not name the node, the panic and its frames", op, err)
		}
		if !strings.Contains(pe.Frames[0], "cpu.") {
			t.Errorf("%s: innermost frame %q is not the kernel's", op, pe.Frames[0])
		}
	}
}

func TestLoopStopsAtDeadline(t *testing.T) {
	body := &graph.Graph{Name: "body", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{},
		Inputs:  []graph.Value{{Name: "i"}, {Name: "c"}, {Name: "v"}},
		Outputs: []graph.Value{{Name: "c2"}, {Name: "v2"}},
		Nodes: []*graph.Node{
			{Name: "keep", OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{Name: "inc", OpType: "Add", Inputs: []string{"v", "i"}, Outputs: []string{"v2"}},
		}}
	if err := body.Sort(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	g := oneNode(t, "Loop", 13, map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: body}}, "m", "", "v0")
	g.Inputs = []graph.Value{{Name: "m"}, {Name: "v0"}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := NewModel(g).Run(ctx, map[string]inference.Tensor{"m": tensorOf(t, []int{}, int64(1e15)), "v0": tensorOf(t, []int{}, int64(0))})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

func TestLoopScanOutputsStayInBudget(t *testing.T) {
	// Each iteration scans out a 1 MiB row: a trip count of 10^6 passes a
	// 64 MiB budget long before the deadline.
	row := tensorOf(t, []int{1 << 18}, make([]float32, 1<<18)...)
	body := &graph.Graph{Name: "body", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{"row": row},
		Inputs:  []graph.Value{{Name: "i"}, {Name: "c"}},
		Outputs: []graph.Value{{Name: "c2"}, {Name: "s"}},
		Nodes: []*graph.Node{
			{Name: "keep", OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{Name: "scan", OpType: "Identity", Inputs: []string{"row"}, Outputs: []string{"s"}},
		}}
	if err := body.Sort(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	g := oneNode(t, "Loop", 13, map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: body}}, "m", "")
	g.Inputs = []graph.Value{{Name: "m"}}
	_, err := runLimited(t, g, 64<<20, map[string]inference.Tensor{"m": tensorOf(t, []int{}, int64(1e6))})
	if !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("got %v, want ErrResourceExhausted", err)
	}
}

// TestZeroElementsHugeDims feeds float32[0, 2^62] (no elements; the Example
// coder accepts it) to operators whose loops once counted the other
// dimension: each returns the empty result ONNX defines, or an error.
func TestZeroElementsHugeDims(t *testing.T) {
	const huge = 1 << 62
	x := tensorOf[float32](t, []int{0, huge})
	xt := tensorOf[float32](t, []int{huge, 0})
	for _, tc := range []struct {
		op    string
		attrs map[string]graph.Attr
		in    []inference.Tensor
		want  []int // the output's shape; nil: an error
	}{
		{"Softmax", map[string]graph.Attr{"axis": attrInt(-1)}, []inference.Tensor{x}, []int{0, huge}},
		{"Softmax", map[string]graph.Attr{"axis": attrInt(0)}, []inference.Tensor{x}, []int{0, huge}},
		{"LogSoftmax", map[string]graph.Attr{"axis": attrInt(0)}, []inference.Tensor{x}, []int{0, huge}},
		{"CumSum", nil, []inference.Tensor{x, tensorOf(t, []int{}, int64(0))}, []int{0, huge}},
		{"Relu", nil, []inference.Tensor{x}, []int{0, huge}},
		{"Transpose", nil, []inference.Tensor{x}, []int{huge, 0}},
		{"ReduceSum", map[string]graph.Attr{"keepdims": attrInt(0)}, []inference.Tensor{x, i64s(t, 1)}, []int{0}},
		{"ReduceSum", nil, []inference.Tensor{x, i64s(t, 0)}, nil}, // [1, 2^62] zeros: over any budget
		{"ReduceMax", map[string]graph.Attr{"axes": attrInts(1)}, []inference.Tensor{x}, []int{0, 1}},
		{"ReduceMax", map[string]graph.Attr{"keepdims": attrInt(0)}, []inference.Tensor{x}, []int{}}, // -inf, the max of nothing
		{"MatMul", nil, []inference.Tensor{x, xt}, []int{0, 0}},
		{"ArgMax", map[string]graph.Attr{"axis": attrInt(0)}, []inference.Tensor{x}, nil},
		{"Concat", map[string]graph.Attr{"axis": attrInt(1)}, []inference.Tensor{x, x}, nil}, // 2^63 overflows
		{"Concat", map[string]graph.Attr{"axis": attrInt(0)}, []inference.Tensor{x, x}, []int{0, huge}},
		{"Flatten", map[string]graph.Attr{"axis": attrInt(1)}, []inference.Tensor{x}, []int{0, huge}},
		{"Identity", nil, []inference.Tensor{x}, []int{0, huge}},
	} {
		names := make([]string, len(tc.in))
		feeds := map[string]inference.Tensor{}
		for i, t := range tc.in {
			names[i] = string(rune('a' + i))
			feeds[names[i]] = t
		}
		g := oneNode(t, tc.op, 13, tc.attrs, names...)
		out, err := runLimited(t, g, 64<<20, feeds)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s %v: got %v, want an error", tc.op, tc.attrs, out["y"])
		case tc.want != nil && err != nil:
			t.Errorf("%s %v: %v", tc.op, tc.attrs, err)
		case tc.want != nil && (out["y"].Len() != limit.Count(tc.want...) || !equalInts(out["y"].Shape(), tc.want)):
			t.Errorf("%s %v: got %v, want shape %v", tc.op, tc.attrs, out["y"], tc.want)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFoldingObeysItsBudget(t *testing.T) {
	shape := i64s(t, 1_000_000, 1_000_000)
	g := oneNode(t, "ConstantOfShape", 13, nil, "s")
	g.Inputs = nil
	g.Initializers["s"] = shape
	_, err := Backend{}.Compile(g)
	if !errors.Is(err, inference.ErrBadModel) || !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("got %v, want ErrBadModel and ErrResourceExhausted", err)
	}
}

func TestRunNodeNilLimits(t *testing.T) {
	// Without a run (planning, folding), sizes are still checked.
	n := &graph.Node{Name: "n", OpType: "ConstantOfShape", Outputs: []string{"y"}}
	_, err := RunNode(nil, n, 13, []inference.Tensor{i64s(t, 1<<31-1, 1<<31-1)})
	if !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("got %v, want ErrResourceExhausted", err)
	}
	var re *inference.ResourceError
	if errors.As(err, &re); re.Budget != limit.New(context.Background(), 0).Budget() {
		t.Errorf("budget %d, want the default", re.Budget)
	}
}

// loopChildEnv makes the test binary, started again by
// TestGrowingLoopStopsBeforeTheProcessLimit, run the growing loop itself.
const loopChildEnv = "BEAMML_GROWING_LOOP_CHILD"

// A Loop whose scan output keeps a one-element copy of every iteration,
// with a trip count of 10^15, in a process whose memory limit is 1 GiB
// (GOMEMLIMIT, GOMAXPROCS=2: a default budget of 384 MiB per run): the run
// fails with ErrResourceExhausted before the process's peak resident
// memory reaches 1.2 GiB. The budget counts what the loop holds at its
// real size (record and slice overhead included), not the 8 bytes of
// each value. It runs in a child process, so the limit and the peak are
// its own.
func TestGrowingLoopStopsBeforeTheProcessLimit(t *testing.T) {
	if os.Getenv(loopChildEnv) == "1" {
		growingLoopChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGrowingLoopStopsBeforeTheProcessLimit$", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), loopChildEnv+"=1", "GOMEMLIMIT=1GiB", "GOMAXPROCS=2")
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`growing loop: exhausted=(\w+) peak=(\d+) took=(\S+) err=(.*)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("the child printed no result (%v):\n%s", err, out)
	}
	peak, _ := strconv.ParseInt(string(m[2]), 10, 64)
	t.Logf("child: exhausted %s, peak RSS %s, took %s: %s", m[1], inference.FormatBytes(peak), m[3], m[4])
	if string(m[1]) != "true" {
		t.Errorf("the run ended with %s, want ErrResourceExhausted", m[4])
	}
	if limit := int64(12 << 30 / 10); peak >= limit {
		t.Errorf("peak RSS %s, want under 1.2 GiB", inference.FormatBytes(peak))
	}
}

func growingLoopChild(t *testing.T) {
	body := &graph.Graph{Name: "body", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{},
		Inputs:  []graph.Value{{Name: "i"}, {Name: "c"}},
		Outputs: []graph.Value{{Name: "c2"}, {Name: "s"}},
		Nodes: []*graph.Node{
			{Name: "keep", OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c2"}},
			{Name: "scan", OpType: "Identity", Inputs: []string{"i"}, Outputs: []string{"s"}},
		}}
	if err := body.Sort(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	g := oneNode(t, "Loop", 13, map[string]graph.Attr{"body": {Type: graph.AttrGraph, Graph: body}}, "m", "")
	g.Inputs = []graph.Value{{Name: "m"}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	start := time.Now()
	_, err := NewModel(g).Run(ctx, map[string]inference.Tensor{"m": tensorOf(t, []int{}, int64(1e15))})
	took := time.Since(start)
	fmt.Printf("growing loop: exhausted=%v peak=%d took=%v err=%v\n", errors.Is(err, inference.ErrResourceExhausted), peakRSS(t), took.Round(time.Millisecond), err)
}

// peakRSS is the process's peak resident memory (VmHWM), in bytes.
func peakRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM in /proc/self/status")
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

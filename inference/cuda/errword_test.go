//go:build cgo

package cuda_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
)

// errorCase is a one-node graph whose indices or divisor are a graph
// input, run with data the CPU backend refuses (bad) and with data it
// takes (good).
type errorCase struct {
	c        check.Case // its inputs are the good ones
	input    int        // which input bad replaces
	bad      inference.Tensor
	sentinel error    // what the error wraps, nil for none
	says     []string // what its message says
	// The good run's tolerances against the CPU: 0 (exact) for index and
	// integer ops; float32's for the recurrent cell.
	rtol, atol float64
}

func int32s(shape []int, v ...int32) inference.Tensor {
	t, err := inference.New(shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

func gatherAttrs(name string, v int64) map[string]graph.Attr {
	return map[string]graph.Attr{name: check.AInt(v)}
}

func errorCases() []errorCase {
	i64 := check.Ints
	return []errorCase{
		{c: check.Case{Name: "Gather", Op: "Gather", Attrs: gatherAttrs("axis", 1), Inputs: []check.Input{
			{T: check.Rand(1, -1, 1, 3, 5)}, {T: i64([]int{2, 2}, 4, -5, 0, 1)}}},
			input: 1, bad: i64([]int{2, 2}, 4, 0, 7, 1), sentinel: inference.ErrIndexOutOfRange,
			says: []string{`indices "in1" into data [3 5], axis 1: index 7 out of range for dimension 5`}},
		{c: check.Case{Name: "Gather/negative", Op: "Gather", Inputs: []check.Input{
			{T: check.Rand(2, -1, 1, 4, 3)}, {T: int32s([]int{3}, -4, 3, 0)}}},
			input: 1, bad: int32s([]int{3}, 0, -5, 1), sentinel: inference.ErrIndexOutOfRange,
			says: []string{"index -5 out of range for dimension 4"}},
		{c: check.Case{Name: "GatherElements", Op: "GatherElements", Attrs: gatherAttrs("axis", 1), Inputs: []check.Input{
			{T: check.Rand(3, -1, 1, 2, 3)}, {T: i64([]int{2, 2}, 2, -3, 0, 1)}}},
			input: 1, bad: i64([]int{2, 2}, 2, 3, 0, 1), sentinel: inference.ErrIndexOutOfRange,
			says: []string{"index 3 out of range for dimension 3"}},
		{c: check.Case{Name: "GatherND", Op: "GatherND", Inputs: []check.Input{
			{T: check.Rand(4, -1, 1, 2, 6, 2)}, {T: i64([]int{2, 2}, 1, 5, -2, -6)}}},
			input: 1, bad: i64([]int{2, 2}, 1, 5, 0, 6), sentinel: inference.ErrIndexOutOfRange,
			says: []string{`index tuples "in1" into data [2 6 2], axes 0 to 1: index 6 out of range for dimension 6`}},
		{c: check.Case{Name: "ScatterElements", Op: "ScatterElements", Opset: 16, Inputs: []check.Input{
			{T: check.Rand(5, -1, 1, 3, 2)}, {T: i64([]int{2, 2}, 2, 2, -3, 0)}, {T: check.Rand(6, -1, 1, 2, 2)}}},
			input: 1, bad: i64([]int{2, 2}, 2, 2, -4, 0), sentinel: inference.ErrIndexOutOfRange,
			says: []string{"index -4 out of range for dimension 3"}},
		{c: check.Case{Name: "ScatterND", Op: "ScatterND", Opset: 16, Inputs: []check.Input{
			{T: check.Rand(7, -1, 1, 4, 2)}, {T: i64([]int{2, 1}, 3, 3)}, {T: check.Rand(8, -1, 1, 2, 2)}}},
			input: 1, bad: i64([]int{2, 1}, 3, 9), sentinel: inference.ErrIndexOutOfRange,
			says: []string{"index 9 out of range for dimension 4"}},
		{c: check.Case{Name: "Div/int64", Op: "Div", Inputs: []check.Input{
			{T: i64([]int{2, 3}, 7, -7, 8, 9, 10, 11)}, {T: i64([]int{3}, 2, -1, 5)}}},
			input: 1, bad: i64([]int{3}, 2, 0, 5), sentinel: inference.ErrDivisionByZero,
			says: []string{`integer division by zero: input 1 "in1" holds 0`}},
		{c: check.Case{Name: "Div/int32", Op: "Div", Inputs: []check.Input{
			{T: int32s([]int{3}, 7, -7, 8)}, {T: int32s([]int{3}, 2, -1, 5)}}},
			input: 1, bad: int32s([]int{3}, 2, -1, 0), sentinel: inference.ErrDivisionByZero,
			says: []string{"integer division by zero", "output element 2"}},
		{c: check.Case{Name: "Mod/int64", Op: "Mod", Inputs: []check.Input{
			{T: i64([]int{3}, 7, -7, 8)}, {T: i64([]int{}, 3)}}},
			input: 1, bad: i64([]int{}, 0), sentinel: inference.ErrDivisionByZero,
			says: []string{"integer modulo by zero"}},
		{c: check.Case{Name: "LSTM/sequence_lens", Op: "LSTM", Attrs: gatherAttrs("hidden_size", 3), Inputs: []check.Input{
			{T: check.Rand(9, -1, 1, 3, 2, 2)}, {T: check.Rand(10, -1, 1, 1, 12, 2)}, {T: check.Rand(11, -1, 1, 1, 12, 3)},
			{T: check.Rand(12, -1, 1, 1, 24)}, {T: int32s([]int{2}, 3, 1)}}},
			input: 4, bad: int32s([]int{2}, 3, 4), sentinel: inference.ErrShape,
			says: []string{`input 4 (sequence_lens) "in4" holds 4, outside [0, 3]`}, rtol: 1e-4, atol: 1e-5},
	}
}

// An index out of range, an integer divisor of 0 or a sequence length
// past the sequence computed on the device fails the run with an error naming the node, of the same kind as the
// CPU backend's, wrapping the same sentinel;
// the next run of the same workspace succeeds.
func TestDeviceReportsBadData(t *testing.T) {
	ctx := context.Background()
	for _, ec := range errorCases() {
		t.Run(ec.c.Name, func(t *testing.T) {
			g, good, err := ec.c.Graph()
			if err != nil {
				t.Fatal(err)
			}
			bad := map[string]inference.Tensor{}
			for k, v := range good {
				bad[k] = v
			}
			bad[g.Nodes[0].Inputs[ec.input]] = ec.bad
			want, err := compile(t, cpu.Backend{}, g).Run(ctx, good)
			if err != nil {
				t.Fatal(err)
			}
			g2, _, _ := ec.c.Graph()
			if _, err := compile(t, cpu.Backend{}, g2).Run(ctx, bad); err == nil {
				t.Fatal("the CPU backend takes the bad data")
			} else if ec.sentinel != nil && !errors.Is(err, ec.sentinel) {
				t.Fatalf("the CPU backend says %v, want %v", err, ec.sentinel)
			}

			b, dev := newSim(t, 0)
			g3, _, _ := ec.c.Graph()
			m := compile(t, b, g3).(*cuda.Model)
			// The first run of a shape infers the shapes on the CPU
			// backend, which would see the bad data first.
			if _, err := m.Run(ctx, good); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				_, err := m.Run(ctx, bad)
				switch {
				case err == nil:
					t.Fatalf("round %d: bad data ran", round)
				case ec.sentinel != nil && !errors.Is(err, ec.sentinel):
					t.Errorf("round %d: %v, want %v", round, err, ec.sentinel)
				case !strings.Contains(err.Error(), `node "node" (`+ec.c.Op+`)`):
					t.Errorf("round %d: %v does not name the node", round, err)
				}
				for _, s := range ec.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("round %d: %v does not say %q", round, err, s)
					}
				}
				got, err := m.Run(ctx, good)
				if err != nil {
					t.Fatalf("round %d: the run after a failed one: %v", round, err)
				}
				if err := check.Compare(got["out0"], want["out0"], ec.rtol, ec.atol); err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			}
			if host := m.Stats().HostNodes; len(host) > 0 {
				t.Errorf("nodes on the host: %q", host)
			}
			if err := m.Close(); err != nil {
				t.Error(err)
			}
			if err := dev.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// embedding is a text model's first layer: token ids [N, S] look up rows
// of a table, then a LayerNorm-free projection keeps it small.
func embedding(t testing.TB) *graph.Graph {
	t.Helper()
	g := &graph.Graph{
		Name:         "embedding",
		Opsets:       map[string]int64{"": 17},
		Inputs:       []graph.Value{{Name: "input_ids", DType: inference.Int64, Shape: []int{inference.Dynamic, 6}}},
		Outputs:      []graph.Value{{Name: "y", DType: inference.Float32}},
		Initializers: map[string]inference.Tensor{"table": check.Rand(1, -1, 1, 40, 8), "w": check.Rand(2, -1, 1, 8, 3)},
		Nodes: []*graph.Node{
			{Name: "embed", OpType: "Gather", Inputs: []string{"table", "input_ids"}, Outputs: []string{"e"}},
			{Name: "proj", OpType: "MatMul", Inputs: []string{"e", "w"}, Outputs: []string{"y"}},
		},
	}
	if err := g.Sort(nil); err != nil {
		t.Fatal(err)
	}
	return g
}

func tokenIDs(n int, seed, vocab int64) map[string]inference.Tensor {
	ids := make([]int64, n*6)
	for i := range ids {
		ids[i] = (seed*31 + int64(i)*7) % vocab
	}
	return map[string]inference.Tensor{"input_ids": check.Ints([]int{n, 6}, ids...)}
}

// An embedding lookup on token ids runs on the device: no host node, and
// per batch one copy up (the ids) and two down (the output and the error
// word). A token id past the vocabulary fails its batch, and costs the
// next batch one copy up, which clears the word.
func TestEmbeddingLookupOnDevice(t *testing.T) {
	ctx := context.Background()
	b, dev := newSim(t, 0)
	m := compile(t, b, embedding(t)).(*cuda.Model)
	if _, err := m.Run(ctx, tokenIDs(4, 1, 40)); err != nil { // warm-up
		t.Fatal(err)
	}
	if host := m.HostNodes(); len(host) > 0 {
		t.Fatalf("nodes on the host: %q", m.Stats().HostNodes)
	}
	before := dev.Stats()
	const batches = 4
	for i := range batches {
		feeds := tokenIDs(4, int64(i+2), 40)
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		matchCPU(t, embedding, feeds, got)
	}
	after := dev.Stats()
	if got := after.CopiesHtoD - before.CopiesHtoD; got != batches {
		t.Errorf("%d host→device copies for %d batches, want %d", got, batches, batches)
	}
	if got := after.CopiesDtoH - before.CopiesDtoH; got != 2*batches {
		t.Errorf("%d device→host copies for %d batches, want %d", got, batches, 2*batches)
	}
	if got := after.Allocs - before.Allocs; got != 0 {
		t.Errorf("%d device allocations in steady state", got)
	}

	bad := tokenIDs(4, 1, 40)
	ids, _ := inference.Data[int64](bad["input_ids"])
	ids[13] = 40
	_, err := m.Run(ctx, bad)
	if !errors.Is(err, inference.ErrIndexOutOfRange) || !strings.Contains(err.Error(), `node "embed" (Gather)`) ||
		!strings.Contains(err.Error(), "index 40 out of range for dimension 40") {
		t.Fatalf("token id 40 of 40: %v", err)
	}
	before = dev.Stats()
	feeds := tokenIDs(4, 9, 40)
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	matchCPU(t, embedding, feeds, got)
	if got := dev.Stats().CopiesHtoD - before.CopiesHtoD; got != 2 {
		t.Errorf("%d host→device copies in the batch after a failed one, want 2 (the ids, the cleared word)", got)
	}
	if err := m.Close(); err != nil {
		t.Error(err)
	}
	if err := dev.Close(); err != nil {
		t.Error(err)
	}
}

// The check cases with indices or divisors computed on the device, or
// repeated scatter indices, run with no node on the host (TestOpsMatchCPU
// compares them with the CPU backend).
func TestCheckedCasesStayOnDevice(t *testing.T) {
	n := 0
	for _, c := range check.Cases() {
		if !strings.Contains(c.Name, "device") && !strings.Contains(c.Name, "repeats") {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			b, dev := newSim(t, 0)
			g, feeds, err := c.Graph()
			if err != nil {
				t.Fatal(err)
			}
			m := compile(t, b, g).(*cuda.Model)
			if _, err := m.Run(context.Background(), feeds); err != nil {
				t.Fatal(err)
			}
			if host := m.Stats().HostNodes; len(host) > 0 {
				t.Errorf("nodes on the host: %q", host)
			}
			m.Close()
			if err := dev.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	if n < 20 {
		t.Errorf("%d cases with device-computed indices or divisors, want at least 20", n)
	}
}

//go:build cgo

package cuda_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/check"
)

// recurrentCase is a recurrent node over a [seq, batch, 3] input with
// hidden size 4, weights and bias as initializers, and initial_h when h0.
func recurrentCase(op string, seq, dirs int, h0 bool, attrs map[string]graph.Attr) check.Case {
	gates := map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}[op] * 4
	in := []check.Input{
		{T: check.Rand(1, -1, 1, seq, 2, 3)},
		{T: check.Rand(2, -0.5, 0.5, dirs, gates, 3), Const: true},
		{T: check.Rand(3, -0.5, 0.5, dirs, gates, 4), Const: true},
		{T: check.Rand(4, -0.3, 0.3, dirs, 2*gates), Const: true},
	}
	if h0 {
		in = append(in, check.Input{Absent: true}, check.Input{T: check.Rand(5, -0.5, 0.5, dirs, 2, 4)})
	}
	if dirs == 2 {
		attrs["direction"] = check.AStr("bidirectional")
	}
	return check.Case{Name: op, Op: op, Attrs: attrs, Inputs: in, Outputs: 2}
}

// runRecurrent runs g on the simulated device, checks that every node ran
// there and that the outputs match the CPU backend's, and returns the
// launches and GEMMs of one run.
func runRecurrent(t *testing.T, g func() *graph.Graph, feeds map[string]inference.Tensor) (launches, gemms int) {
	t.Helper()
	b, dev := newSim(t, 0)
	m := compile(t, b, g()).(*cuda.Model)
	defer m.Close()
	ctx := context.Background()
	if _, err := m.Run(ctx, feeds); err != nil { // builds the plan
		t.Fatal(err)
	}
	if hn := m.Stats().HostNodes; len(hn) > 0 {
		t.Fatalf("nodes run on the host: %q", hn)
	}
	before := dev.Stats()
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	after := dev.Stats()
	want, err := compile(t, cpu.Backend{}, g()).Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("outputs %d, CPU %d", len(got), len(want))
	}
	for name, w := range want {
		if err := check.Compare(got[name], w, 1e-4, 1e-5); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}
	return after.Launches - before.Launches, after.Gemms - before.Gemms
}

// A recurrent node costs one GEMM for the input projection, then per time
// step one GEMM (batched over the directions) and one cell launch; the
// first step skips its GEMM when there is no initial_h. A GRU without
// linear_before_reset takes two of each per step; directions with
// different activations take a cell launch each.
func TestRecurrentLaunchesPerStep(t *testing.T) {
	type attrs = map[string]graph.Attr
	for _, tc := range []struct {
		name            string
		c               check.Case
		launches, gemms int
	}{
		{"LSTM-forward", recurrentCase("LSTM", 6, 1, false, attrs{}), 6, 1 + 5},
		{"LSTM-bidirectional-initial-h", recurrentCase("LSTM", 6, 2, true, attrs{}), 6, 1 + 6},
		{"LSTM-activations-per-direction", recurrentCase("LSTM", 6, 2, false, attrs{"activations": {Type: graph.AttrStrings,
			Strings: []string{"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Relu"}}}), 2 * 6, 1 + 5},
		{"GRU-initial-h", recurrentCase("GRU", 5, 1, true, attrs{}), 2 * 5, 1 + 2*5},
		{"GRU-bidirectional", recurrentCase("GRU", 5, 2, false, attrs{}), 1 + 2*4, 1 + 2*4},
		{"GRU-linear-before-reset", recurrentCase("GRU", 5, 1, false, attrs{"linear_before_reset": check.AInt(1)}), 5, 1 + 4},
		{"RNN-reverse-initial-h", recurrentCase("RNN", 4, 1, true, attrs{"direction": check.AStr("reverse")}), 4, 1 + 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, feeds, err := tc.c.Graph()
			if err != nil {
				t.Fatal(err)
			}
			g := func() *graph.Graph {
				g, _, err := tc.c.Graph()
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			launches, gemms := runRecurrent(t, g, feeds)
			if launches != tc.launches || gemms != tc.gemms {
				t.Errorf("%d launches and %d GEMMs per run, want %d and %d", launches, gemms, tc.launches, tc.gemms)
			}
		})
	}
}

// A node that leaves Y out (its first output "") writes only the states,
// which it keeps in Y_h and Y_c.
func TestRecurrentWithoutY(t *testing.T) {
	for _, tc := range []struct {
		op   string
		outs int
	}{{"LSTM", 3}, {"LSTM", 2}, {"GRU", 2}, {"RNN", 2}} {
		t.Run(fmt.Sprintf("%s-%d-outputs", tc.op, tc.outs), func(t *testing.T) {
			c := recurrentCase(tc.op, 4, 2, true, map[string]graph.Attr{"layout": check.AInt(0)})
			c.Outputs = tc.outs
			_, feeds, err := c.Graph()
			if err != nil {
				t.Fatal(err)
			}
			g := func() *graph.Graph {
				g, _, err := c.Graph()
				if err != nil {
					t.Fatal(err)
				}
				n := g.Nodes[0]
				n.Outputs[0] = ""
				g.Outputs = slices.DeleteFunc(g.Outputs, func(v graph.Value) bool { return v.Name == "out0" })
				if err := g.Sort(nil); err != nil {
					t.Fatal(err)
				}
				return g
			}
			runRecurrent(t, g, feeds)
		})
	}
}

package stub_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/testing/stub"
)

func run(t *testing.T, spec inference.Spec, rows int, xs []float32) (map[string]inference.Tensor, error) {
	t.Helper()
	h, err := inference.NewCache(0).Acquire(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	x, err := inference.New([]int{rows, len(xs) / rows}, xs)
	if err != nil {
		t.Fatal(err)
	}
	return h.Model().Run(context.Background(), map[string]inference.Tensor{"x": x})
}

func TestAffine(t *testing.T) {
	// y = x·Wᵀ + b, W = [[1 2 3] [0 -1 0.5]], b = [10 20]
	spec := stub.Affine([][]float32{{1, 2, 3}, {0, -1, 0.5}}, []float32{10, 20})
	out, err := run(t, spec, 2, []float32{1, 1, 1, 2, 0, -2})
	if err != nil {
		t.Fatal(err)
	}
	y, _ := inference.Data[float32](out["y"])
	want := []float32{16, 19.5, 6, 19}
	if out["y"].String() != "float32[2 2]" || len(y) != 4 {
		t.Fatalf("y = %v %v, want float32[2 2]", out["y"], y)
	}
	for i := range want {
		if y[i] != want[i] {
			t.Errorf("y = %v, want %v", y, want)
			break
		}
	}
}

func TestFailuresNameTheRow(t *testing.T) {
	spec := stub.WithFailures(stub.Echo(2), -1)
	if _, err := run(t, spec, 3, []float32{1, 1, 2, 2, 3, 3}); err != nil {
		t.Errorf("batch without a marked row failed: %v", err)
	}
	_, err := run(t, spec, 3, []float32{1, 1, -1, 2, 3, 3})
	if err == nil || !strings.Contains(err.Error(), "row 1 of 3") {
		t.Errorf("error %v, want one naming row 1 of 3", err)
	}
}

func TestBadSpecsFailToLoad(t *testing.T) {
	for name, spec := range map[string]inference.Spec{
		"ragged weights": stub.Affine([][]float32{{1, 2}, {3}}, nil),
		"short bias":     stub.Affine([][]float32{{1, 2}}, []float32{1, 2}),
		"zero width":     stub.Echo(0),
		"load failure":   stub.WithLoadFailure(stub.Echo(2), "broken"),
		"bad delay":      {URI: "stub://x", Format: stub.Format, Options: map[string]string{"kind": "echo", "width": "2", "delay": "soon"}},
		"unknown kind":   {URI: "stub://x", Format: stub.Format, Options: map[string]string{"kind": "tree"}},
	} {
		_, err := inference.NewCache(0).Acquire(context.Background(), spec)
		if !errors.Is(err, inference.ErrBadModel) {
			t.Errorf("%s: error %v, want ErrBadModel", name, err)
		}
	}
}

func TestRecordingAndStats(t *testing.T) {
	spec := stub.WithRecording(stub.Echo(1))
	h, err := inference.NewCache(0).Acquire(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	m := h.Model().(*stub.Model)
	for _, rows := range [][]float32{{1, 2}, {3}} {
		x, _ := inference.New([]int{len(rows), 1}, rows)
		if _, err := m.Run(context.Background(), map[string]inference.Tensor{"x": x}); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Batches(); len(got) != 2 || len(got[0]) != 2 || got[1][0] != 3 {
		t.Errorf("Batches() = %v, want [[1 2] [3]]", got)
	}
	if st := m.Stats(); st.Runs != 2 || st.Rows != 3 || st.MaxInFlight != 1 {
		t.Errorf("Stats() = %+v, want 2 runs, 3 rows, 1 in flight", st)
	}
	h.Release()
	if !m.Closed() {
		t.Error("model not closed after the last release of a cache without linger")
	}
}

// acquire loads spec in a cache of its own; releasing the handle closes
// the model.
func acquire(t *testing.T, spec inference.Spec) (*inference.Handle, *stub.Model) {
	t.Helper()
	h, err := inference.NewCache(0).Acquire(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Release)
	return h, h.Model().(*stub.Model)
}

func batch(t *testing.T, firsts ...float32) map[string]inference.Tensor {
	t.Helper()
	x, err := inference.New([]int{len(firsts), 1}, firsts)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]inference.Tensor{"x": x}
}

// runRecovering runs one batch and returns what Run returned or the
// panic's value.
func runRecovering(m *stub.Model, ctx context.Context, in map[string]inference.Tensor) (err error, panicked any) {
	defer func() { panicked = recover() }()
	_, err = m.Run(ctx, in)
	return err, nil
}

func TestFaultByMarker(t *testing.T) {
	ctx := context.Background()
	t.Run("fail", func(t *testing.T) {
		_, m := acquire(t, stub.WithFault(stub.Echo(1), stub.Fail, 7))
		err, p := runRecovering(m, ctx, batch(t, 1, 7, 7))
		if p != nil || err == nil || err.Error() != "stub: row 1 of 3 has x[0] = 7, marked to fail" {
			t.Errorf("Run = %v, panic %v; want the error naming row 1", err, p)
		}
	})
	t.Run("panic", func(t *testing.T) {
		_, m := acquire(t, stub.WithFault(stub.Echo(1), stub.Panic, 7))
		if err, p := runRecovering(m, ctx, batch(t, 1, 2)); err != nil || p != nil {
			t.Errorf("batch without the marker: error %v, panic %v", err, p)
		}
		_, p := runRecovering(m, ctx, batch(t, 1, 2, 7))
		if p != "stub: row 2 of 3 has x[0] = 7, marked to panic" {
			t.Errorf("panic value %#v, want one naming row 2", p)
		}
	})
	t.Run("hang", func(t *testing.T) {
		_, m := acquire(t, stub.WithFault(stub.Echo(1), stub.Hang, 7))
		ctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		err, p := runRecovering(m, ctx, batch(t, 7))
		if p != nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "marked to hang") {
			t.Errorf("Run = %v, panic %v; want an error naming the row and wrapping the deadline", err, p)
		}
	})
	t.Run("deadlock", func(t *testing.T) {
		h, m := acquire(t, stub.WithFault(stub.Echo(1), stub.Deadlock, 7))
		ctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := m.Run(ctx, batch(t, 1, 7))
			done <- err
		}()
		select {
		case err := <-done:
			t.Fatalf("Run returned %v past its deadline, want it to ignore its context", err)
		case <-time.After(50 * time.Millisecond):
		}
		h.Release() // the last reference: the cache closes the model
		if err := <-done; err == nil || !strings.Contains(err.Error(), "marked to deadlock: the model was closed") {
			t.Errorf("Run after Close = %v, want the deadlock's error", err)
		}
	})
}

// A rate chooses rows by their first value alone: about rate of them, the
// same ones in every batch, independently for each fault.
func TestFaultRate(t *testing.T) {
	const n, rate = 20000, 0.01
	var panics, hangs, both int
	for i := range n {
		p, h := stub.Selected(stub.Panic, rate, float32(i)), stub.Selected(stub.Hang, rate, float32(i))
		if p {
			panics++
		}
		if h {
			hangs++
		}
		if p && h {
			both++
		}
		if stub.Selected(stub.Panic, 0, float32(i)) || !stub.Selected(stub.Panic, 1, float32(i)) {
			t.Fatal("rate 0 chose a row or rate 1 left one out")
		}
		if p && !stub.Selected(stub.Panic, 2*rate, float32(i)) {
			t.Fatalf("x0 = %d is chosen at rate %v and not at %v", i, rate, 2*rate)
		}
	}
	// Binomial(20000, 0.01): mean 200, standard deviation 14.
	if panics < 140 || panics > 260 || hangs < 140 || hangs > 260 || both > 10 {
		t.Errorf("chose %d rows to panic and %d to hang (%d both) of %d at rate %v, want about %d each and few in common", panics, hangs, both, n, rate, int(n*rate))
	}

	_, m := acquire(t, stub.WithFaultRate(stub.Echo(1), stub.Panic, 0.05))
	var firsts []float32
	for i := range 200 {
		firsts = append(firsts, float32(i))
	}
	for size := 1; size <= 16; size *= 2 {
		for start := 0; start < len(firsts); start += size {
			rows := firsts[start : start+size]
			want := slices.ContainsFunc(rows, func(x0 float32) bool { return stub.Selected(stub.Panic, 0.05, x0) })
			if _, p := runRecovering(m, context.Background(), batch(t, rows...)); (p != nil) != want {
				t.Fatalf("batch %v: panicked %t, want %t", rows, p != nil, want)
			}
		}
	}
}

func TestMemoryUse(t *testing.T) {
	_, m := acquire(t, stub.WithMemoryUse(stub.Echo(1), 100))
	ctx := inference.WithMemoryBudget(context.Background(), 1000)
	if _, err := m.Run(ctx, batch(t, 2, -3, 5)); err != nil { // 1000 bytes: fits
		t.Errorf("a run within the budget failed: %v", err)
	}
	_, err := m.Run(ctx, batch(t, 2, -3, 5.5))
	var re *inference.ResourceError
	if !errors.Is(err, inference.ErrResourceExhausted) || !errors.As(err, &re) || re.Bytes != 1050 || re.Budget != 1000 {
		t.Errorf("run over the budget: %v, want a ResourceError for 1050 bytes over 1000", err)
	}
	if _, err := m.Run(context.Background(), batch(t, 2, -3, 5.5)); err != nil {
		t.Errorf("a run within the default budget (at least %d bytes) failed: %v", inference.MinMemoryBudget, err)
	}
}

func TestBadFaultOptions(t *testing.T) {
	for name, opts := range map[string]map[string]string{
		"rate above 1":      {"panic_rate": "1.5"},
		"rate not a number": {"hang_rate": "often"},
		"bad marker":        {"deadlock_on": "x"},
		"bad memory use":    {"memory_use": "-1"},
	} {
		opts["kind"], opts["width"] = "echo", "1"
		_, err := inference.NewCache(0).Acquire(context.Background(), inference.Spec{URI: "stub://x", Format: stub.Format, Options: opts})
		if !errors.Is(err, inference.ErrBadModel) {
			t.Errorf("%s: error %v, want ErrBadModel", name, err)
		}
	}
	for name, f := range map[string]func(){
		"unknown fault": func() { stub.WithFault(stub.Echo(1), "explode", 1) },
		"negative rate": func() { stub.WithFaultRate(stub.Echo(1), stub.Panic, -0.1) },
		"NaN rate":      func() { stub.WithFaultRate(stub.Echo(1), stub.Panic, math.NaN()) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

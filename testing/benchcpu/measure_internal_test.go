package main

import (
	"errors"
	"slices"
	"testing"
)

var sink []byte

func TestMeasure(t *testing.T) {
	calls := 0
	m, err := measure(func() error {
		calls++
		sink = make([]byte, 1<<20)
		return nil
	}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 3 || m.runs != 3 {
		t.Errorf("with no time budget: %d calls, %d runs, want 3", calls, m.runs)
	}
	if m.allocs < 1 || m.bytes < 1<<20 {
		t.Errorf("per run: %v allocations, %v bytes, want at least 1 and 1 MiB", m.allocs, m.bytes)
	}

	calls = 0
	bad := errors.New("bad")
	if _, err := measure(func() error { calls++; return bad }, 3, 0); !errors.Is(err, bad) || calls != 1 {
		t.Errorf("measure = %v after %d calls, want the first call's error", err, calls)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1}, 3}, {[]float64{9, 1, 4}, 4}, {[]float64{4, 8, 1, 2}, 3}} {
		in := slices.Clone(c.xs)
		if got := median(c.xs); got != c.want || !slices.Equal(in, c.xs) {
			t.Errorf("median(%v) = %v, want %v, input left as it was", in, got, c.want)
		}
	}
}

package limit

import (
	"context"
	"testing"
	"unsafe"
)

func addr[T any](s []T) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(s))) }

// A buffer goes back to the free lists when the last value that holds it,
// a view into its middle included, dies; Sweep frees scratch nothing
// holds; End lets buffers still held leave with their values.
func TestPoolLifetimes(t *testing.T) {
	p := NewPool()
	r := New(context.Background(), 0)
	r.SetPool(p)

	a, _ := Make[float32](r, 1024)
	p.Ref(addr(a))
	p.Ref(addr(a[512:])) // a view of a's second half
	mark := p.Mark()
	scratch, _ := Make[int64](r, 512)
	p.Sweep(mark)
	if p.Bytes() != 4096 {
		t.Fatalf("after Sweep: %d bytes free, want the scratch's 4096", p.Bytes())
	}
	if again, _ := Make[float64](r, 512); addr(again) != addr(scratch) {
		t.Error("the swept scratch was not handed out again")
	}
	p.Unref(addr(a))
	if p.Bytes() != 0 {
		t.Fatalf("a freed while its view lives: %d bytes free", p.Bytes())
	}
	p.Unref(addr(a[512:]))
	if p.Bytes() != 4096 {
		t.Fatalf("after both values died: %d bytes free, want 4096", p.Bytes())
	}
	b, _ := Make[float32](r, 1024)
	if addr(b) != addr(a) {
		t.Error("a's buffer was not handed out again")
	}
	for i := range b {
		if b[i] != 0 {
			t.Fatalf("a reused buffer is not zeroed: b[%d] = %v", i, b[i])
		}
	}
	p.Ref(addr(b)) // an output: leaves with the caller
	p.End()
	if c, _ := Make[float32](r, 1024); addr(c) == addr(b) {
		t.Error("a buffer an output holds was handed out in the next run")
	}
	if empty, _ := Make[float32](r, 0); p.holder(addr(empty)) != nil {
		t.Error("a buffer under MinPooled came from the pool")
	}
	for range keepRuns + 1 {
		p.End()
	}
	if p.Bytes() != 0 {
		t.Errorf("%d bytes kept for sizes no run asked for in %d runs", p.Bytes(), keepRuns)
	}
}

// Runs that ask for the same sizes in the same order get the same buffers
// in the same places, whatever order they were freed in, and the request
// whose buffer left with the caller (an output) gets a new one rather
// than an intermediate's.
func TestPoolRepeatsPlaces(t *testing.T) {
	p := NewPool()
	r := New(context.Background(), 0)
	r.SetPool(p)
	run := func() (a, b, out uintptr) {
		x, _ := Make[float32](r, 256)
		y, _ := Make[float32](r, 256)
		p.Ref(addr(x))
		p.Ref(addr(y))
		p.Unref(addr(x)) // x dies first, then the output is taken: it would reuse x's buffer
		o, _ := Make[float32](r, 256)
		p.Ref(addr(o))
		p.Unref(addr(y))
		p.End()
		return addr(x), addr(y), addr(o)
	}
	run()
	a1, b1, o1 := run()
	for i := range 3 {
		a, b, o := run()
		if a != a1 || b != b1 {
			t.Fatalf("run %d: intermediates in %#x, %#x; the run before had %#x, %#x", i+3, a, b, a1, b1)
		}
		if o == o1 || o == a || o == b {
			t.Fatalf("run %d: the output's buffer %#x is one the pool kept", i+3, o)
		}
		o1 = o
	}
}

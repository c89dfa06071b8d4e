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

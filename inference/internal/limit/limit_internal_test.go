package limit

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/beamml/beamml/inference"
)

func TestMakeChecksBeforeAllocating(t *testing.T) {
	r := New(context.Background(), 1<<20)
	for _, tc := range []struct {
		shape []int
		bytes int64 // in the error; -1: overflows
	}{
		{[]int{1 << 20}, 4 << 20},
		{[]int{1 << 31, 1 << 31}, -1}, // 2^62 float32s are 2^64 bytes
		{[]int{math.MaxInt, 2}, -1},
		{[]int{1 << 40}, 4 << 40},
	} {
		_, err := Make[float32](r, tc.shape...)
		var re *inference.ResourceError
		if !errors.As(err, &re) || !errors.Is(err, inference.ErrResourceExhausted) {
			t.Fatalf("Make%v: got %v, want a ResourceError", tc.shape, err)
		}
		if re.Bytes != tc.bytes || re.Budget != 1<<20 || re.What == "" {
			t.Errorf("Make%v: error %+v, want %d bytes over a budget of 1 MiB", tc.shape, re, tc.bytes)
		}
	}
	if r.InUse() != 0 {
		t.Errorf("refused requests hold %d bytes", r.InUse())
	}
	if _, err := Make[float32](r, -1); !errors.Is(err, inference.ErrShape) {
		t.Errorf("negative dimension: got %v, want ErrShape", err)
	}
}

func TestMakeCountsWhatIsHeld(t *testing.T) {
	r := New(context.Background(), 1000)
	a, err := Make[int64](r, 100) // 800 bytes
	if err != nil || len(a) != 100 || r.InUse() != 800 {
		t.Fatalf("got %d elements, %v, %d in use", len(a), err, r.InUse())
	}
	if _, err := Make[int64](r, 26); !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("800 + 208 of 1000: got %v", err)
	}
	if _, err := Make[int64](r, 25); err != nil {
		t.Fatalf("800 + 200 of 1000: %v", err)
	}
	r.Reset(0)
	// Zero elements fit whatever the other dimensions.
	if z, err := Make[float32](r, 0, 1<<62); err != nil || len(z) != 0 {
		t.Fatalf("zero elements: %v", err)
	}
}

func TestNilRunUsesDefaultBudget(t *testing.T) {
	var r *Run
	if r.Budget() != inference.DefaultMemoryBudget() || r.Err() != nil || r.InUse() != 0 {
		t.Fatal("a nil Run is not the default budget without a deadline")
	}
	if _, err := Make[byte](r, int(inference.DefaultMemoryBudget())+1); !errors.Is(err, inference.ErrResourceExhausted) {
		t.Fatalf("got %v", err)
	}
}

func TestErrAfterDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := New(ctx, 0)
	if r.Err() != nil || r.Budget() != inference.MemoryBudget(ctx) {
		t.Fatal("a new run has expired or has the wrong budget")
	}
	cancel()
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("got %v after cancel", r.Err())
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		want  int
	}{{nil, 1}, {[]int{2, 3}, 6}, {[]int{1 << 62, 0}, 0}, {[]int{1 << 62, 4, 0}, 0}, {[]int{1 << 62, 4}, -1}, {[]int{-1, 0}, -1}} {
		if got := Count(tc.shape...); got != tc.want {
			t.Errorf("Count%v = %d, want %d", tc.shape, got, tc.want)
		}
	}
}

// Held counts a small tensor at what the heap gives it, not its bytes: a
// scalar's 8 bytes of elements take a 16-byte object; a shape of 3 takes
// 24 bytes rounded to 32; large objects are bounded by an eighth more.
func TestHeld(t *testing.T) {
	scalar, _ := inference.New([]int{}, []int64{7})
	small, _ := inference.New([]int{1, 2, 3}, make([]float32, 6))
	large, _ := inference.New([]int{1 << 20}, make([]float32, 1<<20))
	for _, tc := range []struct {
		t      inference.Tensor
		lo, hi int64
	}{
		{scalar, 16, 16},
		{small, 32 + 32, 32 + 32},
		{large, 4<<20 + 16, 4<<20 + 4<<20/8 + 32},
	} {
		if got := Held(tc.t); got < tc.lo || got > tc.hi {
			t.Errorf("Held(%v) = %d, want %d to %d", tc.t, got, tc.lo, tc.hi)
		}
	}
	if TensorRecord < 32 {
		t.Errorf("TensorRecord %d: a Tensor holds a shape slice, a pointer and a length", TensorRecord)
	}
}

package cpu

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamml/beamml/inference"
)

// TestParallelSplit checks that the chunks cover [0, n) once each, for
// splits finer than, equal to and coarser than the pool, from several
// goroutines at once and from inside chunks (loops in loops must not wait
// on each other).
func TestParallelSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var wg sync.WaitGroup
	for caller := range 4 {
		wg.Go(func() {
			for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
				for _, parts := range []int{1, 2, 3, 4, 5, 9} {
					seen := make([]atomic.Int32, n)
					parallelSplit(n, parts, func(lo, hi int) {
						// A loop in a loop, on the chunk's own range.
						parallelSplit(hi-lo, 2, func(a, b int) {
							for i := lo + a; i < lo+b; i++ {
								seen[i].Add(1)
							}
						})
					})
					for i := range seen {
						if c := seen[i].Load(); c != 1 {
							t.Errorf("caller %d, n %d, parts %d: index %d visited %d times", caller, n, parts, i, c)
						}
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestParallelSplitPanic checks that a panic in a chunk reaches the caller
// as an *inference.PanicError, and only once every other chunk has ended:
// a chunk still running could write into buffers the caller's recovery
// then reuses.
func TestParallelSplitPanic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, failing := range []int{0, 1, 3} {
		var ended atomic.Int32
		func() {
			defer func() {
				v := recover()
				pe, ok := v.(*inference.PanicError)
				if !ok || !errors.Is(pe, inference.ErrPanic) {
					t.Fatalf("chunk %d failing: recovered %v, want an *inference.PanicError", failing, v)
				}
				if got := ended.Load(); got != 3 {
					t.Errorf("chunk %d failing: the panic came with %d of the other 3 chunks ended", failing, got)
				}
			}()
			parallelSplit(4, 4, func(lo, hi int) {
				if lo == failing {
					panic(fmt.Sprintf("chunk %d failed", lo))
				}
				time.Sleep(20 * time.Millisecond)
				ended.Add(1)
			})
		}()
	}
	// The pool still works after the panics.
	var sum atomic.Int64
	parallelSplit(100, 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum.Add(int64(i))
		}
	})
	if sum.Load() != 4950 {
		t.Errorf("after the panics, the sum of 0…99 is %d, want 4950", sum.Load())
	}
}

var parallelSink [64]float32

func parallelTouch(lo, hi int) {
	for i := lo; i < hi; i++ {
		parallelSink[i]++
	}
}

// TestParallelSplitAllocs checks that a parallel loop allocates nothing of
// its own: batches are reused and workers are not started per loop.
func TestParallelSplitAllocs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	parallelSplit(64, 4, parallelTouch) // start the workers
	if allocs := testing.AllocsPerRun(200, func() { parallelSplit(64, 4, parallelTouch) }); allocs != 0 {
		t.Errorf("parallelSplit allocates %v times per loop, want 0", allocs)
	}
}

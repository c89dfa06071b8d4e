package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/beamml/beamml/inference"
)

// Parallel loops of the kernels: work split among goroutines when it is
// large enough to pay for them.

// parallelFor calls fn on contiguous chunks of [0, n) that together cover
// it, on up to GOMAXPROCS goroutines when the work, n·cost (flops or
// element visits), reaches nnSgemmSerialFlops, and on the calling goroutine
// otherwise.
func parallelFor(n, cost int, fn func(lo, hi int)) {
	workers := 1
	if n > 1 && n*cost >= nnSgemmSerialFlops {
		workers = min(n, runtime.GOMAXPROCS(0), max(1, n*cost/nnSgemmTaskFlops))
	}
	if workers <= 1 {
		fn(0, n)
		return
	}
	var g group
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		g.Go(func() { fn(lo, hi) })
	}
	g.Wait()
}

// group is a sync.WaitGroup whose goroutines cannot end the process: a
// panic on one is recovered there and raised again by Wait on the caller's
// goroutine, where the executor turns it into the node's error.
type group struct {
	wg       sync.WaitGroup
	panicked atomic.Pointer[inference.PanicError]
}

// Go calls fn on a new goroutine.
func (g *group) Go(fn func()) {
	g.wg.Go(func() {
		defer func() {
			if v := recover(); v != nil {
				g.panicked.CompareAndSwap(nil, inference.Recovered("a kernel's worker goroutine", v))
			}
		}()
		fn()
	})
}

// Wait waits for the goroutines, then panics with the first one's panic.
func (g *group) Wait() {
	g.wg.Wait()
	if pe := g.panicked.Load(); pe != nil {
		panic(pe)
	}
}

// eachUnit runs body over units independent products of flops work each
// (images × groups of a convolution, matrices of a batched MatMul). Units
// go to separate goroutines, each running its SGEMMs with threads = 1, when
// they divide evenly among the cores or are too small to split further;
// otherwise one goroutine runs them in turn and each SGEMM gets every core.
func eachUnit(units, flops int, body func(lo, hi, threads int)) {
	procs := runtime.GOMAXPROCS(0)
	if units > 1 && (flops < nnSgemmSerialFlops || units%procs == 0 || units >= 4*procs) {
		parallelFor(units, flops, func(lo, hi int) { body(lo, hi, 1) })
		return
	}
	body(0, units, procs)
}

package cpu

import "sync"

// A freeList keeps values for reuse as a sync.Pool does, except that the
// collector does not empty it: a sync.Pool drops what it holds at every
// collection, and the kernels' loops and scratch (pack buffers of a MiB,
// the parallel loops' records) would then be allocated again in the run
// after, where a steady run must allocate nothing. It keeps at most
// freeListMax values; those put beyond are left to the collector.
type freeList[T any] struct {
	mu    sync.Mutex
	items []*T
	make  func() *T
}

// freeListMax bounds what a freeList keeps: more than the goroutines that
// take from one at once (the callers of concurrent runs and the kernel
// workers).
const freeListMax = 64

// get returns a kept value, or a new one.
func (f *freeList[T]) get() *T {
	f.mu.Lock()
	if n := len(f.items); n > 0 {
		x := f.items[n-1]
		f.items[n-1] = nil
		f.items = f.items[:n-1]
		f.mu.Unlock()
		return x
	}
	f.mu.Unlock()
	return f.make()
}

// put keeps x for a later get.
func (f *freeList[T]) put(x *T) {
	f.mu.Lock()
	if len(f.items) < freeListMax {
		f.items = append(f.items, x)
	}
	f.mu.Unlock()
}

// Package limit bounds what one run of a model may use: the memory its
// kernels allocate and the time it takes. The executor makes a Run for
// each model run and hands it to every kernel (opsem.Node.Run); a kernel
// allocates through Make, which checks the size for overflow and against
// the run's memory budget before it allocates, and a kernel whose work is
// not bounded by its output's size polls Err.
//
// A nil *Run is valid: it checks sizes against inference.DefaultMemoryBudget
// without counting what is held, and never expires.
package limit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/beamml/beamml/inference"
)

// Run is the state of one run: its deadline and the bytes its live values
// and the running kernel's scratch hold. Its methods are safe for
// concurrent use (kernels allocate from several goroutines).
type Run struct {
	done   <-chan struct{}
	ctx    context.Context
	budget int64
	inUse  atomic.Int64
	pool   *Pool // where Make takes buffers from, or nil: make
}

// New returns the limits of a run under ctx with the given memory budget
// in bytes (≤ 0: the context's, inference.MemoryBudget).
func New(ctx context.Context, budget int64) *Run {
	r := new(Run)
	r.Start(ctx, budget)
	return r
}

// Start makes r the limits of a new run under ctx, as New does, keeping
// its pool: an executor reuses one Run per concurrent run.
func (r *Run) Start(ctx context.Context, budget int64) {
	if budget <= 0 {
		budget = inference.MemoryBudget(ctx)
	}
	r.done, r.ctx, r.budget = ctx.Done(), ctx, budget
	r.inUse.Store(0)
}

// Budget is the run's memory budget in bytes.
func (r *Run) Budget() int64 {
	if r == nil {
		return inference.DefaultMemoryBudget()
	}
	return r.budget
}

// InUse is the bytes the run holds now.
func (r *Run) InUse() int64 {
	if r == nil {
		return 0
	}
	return r.inUse.Load()
}

// Err returns the context's error once the run's deadline has passed or it
// was cancelled, nil before. It is cheap enough to call every few thousand
// iterations of a loop.
func (r *Run) Err() error {
	if r == nil || r.done == nil {
		return nil
	}
	select {
	case <-r.done:
		return r.ctx.Err()
	default:
		return nil
	}
}

// Reserve counts bytes against the budget, or fails with an
// *inference.ResourceError naming what (bytes < 0: a size that overflows).
func (r *Run) Reserve(what func() string, bytes int64) error {
	budget, used := r.Budget(), r.InUse()
	if bytes < 0 || bytes > budget-used {
		return &inference.ResourceError{What: what(), Bytes: bytes, Budget: budget, InUse: used}
	}
	if r != nil {
		r.inUse.Add(bytes)
	}
	return nil
}

// Hold counts bytes already allocated (a kernel's outputs, kept after its
// scratch is released) without checking them.
func (r *Run) Hold(bytes int64) {
	if r != nil {
		r.inUse.Add(bytes)
	}
}

// Release gives back bytes counted by Reserve or Hold.
func (r *Run) Release(bytes int64) {
	if r != nil {
		r.inUse.Add(-bytes)
	}
}

// Reset sets the bytes in use back to mark, an earlier InUse: the
// executor releases a kernel's scratch so.
func (r *Run) Reset(mark int64) {
	if r != nil {
		r.inUse.Store(mark)
	}
}

// Bytes is the size of count elements of elemSize bytes, or -1 when it
// overflows int64 or count is negative.
func Bytes(count int, elemSize uintptr) int64 {
	if count < 0 || (elemSize > 0 && uint64(count) > uint64(math.MaxInt64)/uint64(elemSize)) {
		return -1
	}
	return int64(count) * int64(elemSize)
}

// Count is the number of elements of shape, or -1 when a dimension is
// negative or the product overflows int. A shape with a zero dimension
// has no elements, whatever its other dimensions.
func Count(shape ...int) int {
	n := 1
	zero := false
	for _, d := range shape {
		switch {
		case d < 0:
			return -1
		case d == 0:
			zero = true
		case n > math.MaxInt/d:
			n = -1
		case n >= 0:
			n *= d
		}
	}
	if zero {
		return 0
	}
	return n
}

// Make allocates the elements of a tensor (or a table) of the given shape,
// zeroed, once its size is known to fit the run's budget: the one place
// kernels size what they allocate. A negative dimension fails with
// inference.ErrShape, a size over the budget with an
// *inference.ResourceError. With a Pool (SetPool) the elements come from
// its free buffers where it has one of the size.
func Make[T any](r *Run, shape ...int) ([]T, error) { return makeIn[T](r, true, shape) }

// MakeOverwritten is Make for a kernel that writes every element before
// it reads any: a buffer the pool hands out again keeps its old contents
// rather than being cleared (a new one is zeroed, as Go allocates it).
func MakeOverwritten[T any](r *Run, shape ...int) ([]T, error) {
	return makeIn[T](r, false, shape)
}

// makeIn is Make, clearing a reused buffer only when zeroed is set.
func makeIn[T any](r *Run, zeroed bool, shape []int) ([]T, error) {
	n, err := Claim[T](r, shape...)
	if err != nil {
		return nil, err
	}
	if p := r.Pool(); p != nil {
		if s, ok := makePooled[T](p, n, zeroed); ok {
			return s, nil
		}
	}
	return make([]T, n), nil
}

// Claim is Make for an allocation made elsewhere (by a shape rule that
// returns an offset table, by inference.Stack): it checks and counts the
// size of a []T of the given shape, and returns its length.
func Claim[T any](r *Run, shape ...int) (int, error) {
	for _, d := range shape {
		if d < 0 {
			// A copy: shape itself, often the caller's variadic
			// arguments, must not escape, or every call allocates it.
			return 0, fmt.Errorf("shape %v has a negative dimension: %w", slices.Clone(shape), inference.ErrShape)
		}
	}
	var zero T
	n := Count(shape...)
	bytes := int64(-1)
	if n >= 0 {
		bytes = Bytes(n, unsafe.Sizeof(zero))
	}
	if err := r.Reserve(func() string { return describe[T](shape) }, bytes); err != nil {
		return 0, err
	}
	return n, nil
}

func describe[T any](shape []int) string {
	var zero T
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	return fmt.Sprintf("%T[%s]", zero, strings.Join(dims, " "))
}

// TensorRecord is the size of an inference.Tensor value: what a slice of
// tensors holds per element besides their elements and shapes.
const TensorRecord = int64(unsafe.Sizeof(inference.Tensor{}))

// Held is an upper bound of the heap memory a tensor kept alive holds
// besides its record: its elements and its shape, each as the Go
// allocator allocates it (allocated). A loop that keeps a small tensor per
// iteration holds far more than the tensor's ByteSize; this is what a
// kernel that keeps values counts against the budget.
func Held(t inference.Tensor) int64 {
	return allocated(t.ByteSize()) + allocated(int64(t.Rank())*int64(unsafe.Sizeof(int(0))))
}

// allocated is an upper bound of the bytes the Go allocator takes for an
// object of n bytes: nothing for none, else n rounded up to its size
// class, which wastes at most an eighth over 16 bytes (runtime/sizeclasses.go)
// and rounds anything smaller up to 16.
func allocated(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 16:
		return 16
	default:
		return (n + n/8 + 15) &^ 15
	}
}

package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// A lowering turns one node, at the shapes of one plan, into device work:
// kernel launches, GEMMs and copies. It registers under its operator type
// in an init function of a lower_*.go file. A lowering that cannot handle
// the node at these shapes or types returns l.NoKernel(why): the node then
// runs on the host with the CPU reference kernel (its inputs copied back,
// its outputs copied up), and Model.Stats names it.
type lowering func(l *Lower) error

var lowerings = map[string]lowering{}

func registerLowering(op string, f lowering) {
	if _, dup := lowerings[op]; dup {
		panic("cuda: lowering registered twice: " + op)
	}
	lowerings[op] = f
}

// errNoKernel marks a node that runs on the host.
var errNoKernel = errors.New("no device kernel")

// region is where a value lives.
type region uint8

const (
	regWeights   region = iota + 1 // the model's initializers, uploaded once
	regConsts                      // host-computed values of one plan, uploaded once per plan
	regWorkspace                   // intermediates, inputs and outputs of one run
	regScratch                     // a node's temporaries, in the workspace after the values
)

// loc is a device address relative to its region's base.
type loc struct {
	reg region
	off int64
}

// Operand is a value as a lowering sees it: type, shape at this plan, and
// where it lives on the device.
type Operand struct {
	Name  string
	DType inference.DType
	Shape []int
	loc   loc
	host  *inference.Tensor // the value, when the host knows it at plan time
}

// Present reports whether the operand is there (an optional input left
// out is not).
func (o Operand) Present() bool { return o.DType != 0 }

// Len is the number of elements.
func (o Operand) Len() int64 {
	n := int64(1)
	for _, d := range o.Shape {
		n *= int64(d)
	}
	return n
}

// Bytes is the size in bytes.
func (o Operand) Bytes() int64 { return o.Len() * int64(o.DType.Size()) }

// Rank is the number of dimensions.
func (o Operand) Rank() int { return len(o.Shape) }

// Host returns the value when it is known on the host at plan time: an
// initializer, or a value computed only from shapes and constants (Shape,
// and the arithmetic on it).
func (o Operand) Host() (inference.Tensor, bool) {
	if o.host == nil {
		return inference.Tensor{}, false
	}
	return *o.host, true
}

// Offset returns the operand starting elems elements further on, with the
// given shape: a view, for kernels that work on part of a buffer.
func (o Operand) Offset(elems int64, shape []int) Operand {
	v := o
	v.loc.off += elems * int64(o.DType.Size())
	v.Shape = slices.Clone(shape)
	v.host = nil
	return v
}

// Arg is one 8-byte kernel parameter.
type Arg struct {
	lit uint64
	ptr bool
	at  loc
}

// P passes the device address of o.
func P(o Operand) Arg { return Arg{ptr: true, at: o.loc} }

// I passes an integer (a long long parameter).
func I[T ~int | ~int64 | ~int32 | ~uint32](v T) Arg { return Arg{lit: uint64(int64(v))} }

// F passes a float as a double parameter.
func F[T ~float32 | ~float64](v T) Arg { return Arg{lit: math.Float64bits(float64(v))} }

// Lower is the context of one node's lowering.
type Lower struct {
	Node  *graph.Node
	Opset int64
	In    []Operand // one per node input; absent optional inputs are not Present
	Out   []Operand // one per node output
	p     *planBuilder
	steps []step
	// scratch bytes taken by this node so far
	scratch int64
}

// Attrs of the node, with defaults.
func (l *Lower) Int(name string, def int64) int64            { return l.Node.Int(name, def) }
func (l *Lower) Float(name string, def float32) float32      { return l.Node.Float(name, def) }
func (l *Lower) Ints(name string, def []int64) []int64       { return l.Node.Ints(name, def) }
func (l *Lower) Floats(name string, def []float32) []float32 { return l.Node.Floats(name, def) }
func (l *Lower) Str(name, def string) string                 { return l.Node.Str(name, def) }

// Arg returns input i, or an absent Operand when the node has fewer.
func (l *Lower) Arg(i int) Operand {
	if i < len(l.In) {
		return l.In[i]
	}
	return Operand{}
}

// NoKernel sends the node to the host, saying why.
func (l *Lower) NoKernel(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errNoKernel)
}

// Errorf reports a node the model cannot run (wrong shapes, types), naming it.
func (l *Lower) Errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("cuda: node %v: %s: %w", l.Node, fmt.Sprintf(format, args...), sentinel)
}

// Threads is the block size of the 1-D launches.
const Threads = 256

// maxGrid bounds the blocks of a 1-D launch; the kernels loop (GRID_STRIDE).
const maxGrid = 1 << 16

// Launch queues kernel over n elements: a 1-D grid of Threads-wide blocks,
// enough to cover n (at most maxGrid; the kernel's grid-stride loop covers
// the rest). Nothing is launched for n == 0.
func (l *Lower) Launch(kernel string, n int64, args ...Arg) error {
	if n <= 0 {
		return nil
	}
	blocks := min((n+Threads-1)/Threads, maxGrid)
	return l.LaunchGrid(kernel, Dim3{uint32(blocks), 1, 1}, Dim3{Threads, 1, 1}, args...)
}

// LaunchGrid queues kernel on an explicit grid.
func (l *Lower) LaunchGrid(kernel string, grid, block Dim3, args ...Arg) error {
	f, err := l.p.m.b.function(kernel)
	if err != nil {
		return fmt.Errorf("cuda: node %v: %w", l.Node, err)
	}
	if grid.Y == 0 {
		grid.Y = 1
	}
	if grid.Z == 0 {
		grid.Z = 1
	}
	if block.Y == 0 {
		block.Y = 1
	}
	if block.Z == 0 {
		block.Z = 1
	}
	l.steps = append(l.steps, step{kind: stepLaunch, kernel: kernel, fn: f, grid: grid, block: block, args: slices.Clone(args)})
	return nil
}

// GemmOp is a Gemm on operands: A, B and C are the first matrices (with
// the element offsets AOff, BOff, COff), the rest as in Gemm.
type GemmOp struct {
	Gemm
	OpA, OpB, OpC    Operand
	AOff, BOff, COff int64 // elements
}

// Gemm queues a cuBLAS product.
func (l *Lower) Gemm(g GemmOp) error {
	if g.Batch == 0 {
		g.Batch = 1
	}
	if g.M == 0 || g.N == 0 {
		return nil
	}
	l.steps = append(l.steps, step{kind: stepGemm, gemm: g})
	return nil
}

// Copy queues a device copy of src's bytes into dst.
func (l *Lower) Copy(dst, src Operand) error {
	if dst.Bytes() != src.Bytes() {
		return l.Errorf(inference.ErrShape, "copy of %d bytes into %d", src.Bytes(), dst.Bytes())
	}
	if dst.Bytes() == 0 || dst.loc == src.loc {
		return nil
	}
	l.steps = append(l.steps, step{kind: stepCopy, dst: dst.loc, src: src.loc, bytes: src.Bytes()})
	return nil
}

// Scratch returns a temporary buffer that lives for this node's steps
// only (im2col columns, partial sums). Its contents start undefined.
func (l *Lower) Scratch(dtype inference.DType, shape []int) Operand {
	o := Operand{Name: "(scratch)", DType: dtype, Shape: slices.Clone(shape)}
	o.loc = loc{reg: regScratch, off: l.scratch}
	l.scratch += (o.Bytes() + graph.Align - 1) / graph.Align * graph.Align
	return o
}

type stepKind uint8

const (
	stepLaunch stepKind = iota + 1
	stepGemm
	stepCopy
	stepHost
)

// step is one piece of device work of a plan, with addresses relative to
// their regions.
type step struct {
	kind   stepKind
	kernel string
	fn     Function
	grid   Dim3
	block  Dim3
	args   []Arg
	gemm   GemmOp
	dst    loc
	src    loc
	bytes  int64
	host   *hostStep
}

// hostStep runs a node with the CPU reference kernel.
type hostStep struct {
	node *graph.Node
	why  string
	in   []Operand
	out  []Operand
}

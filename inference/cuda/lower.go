package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/family"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// A lowering turns one node, at the shapes of one plan, into device work:
// kernel launches, GEMMs and copies. It registers under its operator type
// in an init function of a lower_*.go file. A lowering that cannot handle
// the node at these shapes or types returns l.NoKernel(why): the node then
// runs on the host with the CPU reference kernel (its inputs copied back,
// its outputs copied up), and Model.Stats names it.
type lowerFunc func(l *lowering) error

var lowerings = map[string]lowerFunc{}

// registerLowering adds op's lowering; it is called from the init function
// of the op's family file, lower_<family>.go, the counterpart of the CPU's
// ops_<family>.go (family.Record reads the family off it). An operator of
// ai.onnx.ml registers as "ai.onnx.ml.Op", as the CPU backend's kernels do
// (loweringKey).
func registerLowering(op string, f lowerFunc) {
	if _, dup := lowerings[op]; dup {
		panic("cuda: lowering registered twice: " + op)
	}
	lowerings[op] = f
	family.Record("cuda", op)
}

// mlDomain is the domain of the classical-ML operators.
const mlDomain = cpu.MLDomain

// loweringKey is the key of n's lowering: its operator type, prefixed
// with its domain for ai.onnx.ml.
func loweringKey(n *graph.Node) string {
	if n.Domain == mlDomain {
		return mlDomain + "." + n.OpType
	}
	return n.OpType
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
	regErrorWord                   // the workspace's error word (errword.go)
)

// loc is a device address relative to its region's base.
type loc struct {
	reg region
	off int64
}

// operand is a value as a lowering sees it: type, shape at this plan, and
// where it lives on the device.
type operand struct {
	Name  string
	DType inference.DType
	Shape []int
	loc   loc
	host  *inference.Tensor // the value, when the host knows it at plan time
}

// Present reports whether the operand is there (an optional input left
// out is not).
func (o operand) Present() bool { return o.DType != 0 }

// Len is the number of elements.
func (o operand) Len() int64 {
	n := int64(1)
	for _, d := range o.Shape {
		n *= int64(d)
	}
	return n
}

// Bytes is the size in bytes.
func (o operand) Bytes() int64 { return o.Len() * int64(o.DType.Size()) }

// Rank is the number of dimensions.
func (o operand) Rank() int { return len(o.Shape) }

// Host returns the value when it is known on the host at plan time: an
// initializer, or a value computed only from shapes and constants (Shape,
// and the arithmetic on it).
func (o operand) Host() (inference.Tensor, bool) {
	if o.host == nil {
		return inference.Tensor{}, false
	}
	return *o.host, true
}

// Offset returns the operand starting elems elements further on, with the
// given shape: a view, for kernels that work on part of a buffer.
func (o operand) Offset(elems int64, shape []int) operand {
	v := o
	v.loc.off += elems * int64(o.DType.Size())
	v.Shape = slices.Clone(shape)
	v.host = nil
	return v
}

// kernelArg is one 8-byte kernel parameter.
type kernelArg struct {
	lit uint64
	ptr bool
	at  loc
}

// ptrArg passes the device address of o.
func ptrArg(o operand) kernelArg { return kernelArg{ptr: true, at: o.loc} }

// optionalArg is ptrArg for a present operand, a null pointer otherwise.
func optionalArg(o operand) kernelArg {
	if !o.Present() {
		return intArg(0)
	}
	return ptrArg(o)
}

// intArg passes an integer (a long long parameter).
func intArg[T ~int | ~int64 | ~int32 | ~uint32](v T) kernelArg {
	return kernelArg{lit: uint64(int64(v))}
}

// floatArg passes a float as a double parameter.
func floatArg[T ~float32 | ~float64](v T) kernelArg {
	return kernelArg{lit: math.Float64bits(float64(v))}
}

// lowering is the context of one node's lowering: the node with its
// attributes and opset (what the opsem rules read), its operands at this
// plan's shapes, and the steps queued so far.
type lowering struct {
	opsem.Node
	In    []operand // one per node input; absent optional inputs are not Present
	Out   []operand // one per node output
	p     *planBuilder
	steps []step
	// scratch bytes taken by this node so far
	scratch int64
	// sites of this node's kernels on the error word, numbered after the
	// plan's (errorWord)
	sites []errorSite
	// offer is the pointwise epilogue step this node lets the reader of
	// its output apply instead; absorbed lists the inputs whose offered
	// epilogue this node applies (deferEpilogue, takeEpilogue).
	offer    *offeredEpilogue
	absorbed []string
}

// input returns operand i, or an absent operand when the node has fewer.
func (l *lowering) input(i int) operand {
	if i < len(l.In) {
		return l.In[i]
	}
	return operand{}
}

// NoKernel sends the node to the host, saying why.
func (l *lowering) NoKernel(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errNoKernel)
}

// Errorf reports a node the model cannot run (wrong shapes, types), naming it.
func (l *lowering) Errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("cuda: node %v: %s: %w", l.Node, fmt.Sprintf(format, args...), sentinel)
}

// threadsPerBlock is the block size of every launch: the BLOCK the
// kernels that reduce in shared memory are written for.
const threadsPerBlock = kernels.BLOCK

// maxGrid bounds the blocks of a 1-D launch; the kernels loop (GRID_STRIDE).
const maxGrid = 1 << 16

// Launch queues kernel over n elements: a 1-D grid of threadsPerBlock-wide blocks,
// enough to cover n (at most maxGrid; the kernel's grid-stride loop covers
// the rest). Nothing is launched for n == 0.
func (l *lowering) Launch(kernel string, n int64, args ...kernelArg) error {
	if n <= 0 {
		return nil
	}
	blocks := min((n+threadsPerBlock-1)/threadsPerBlock, maxGrid)
	return l.LaunchGrid(kernel, Dim3{uint32(blocks), 1, 1}, Dim3{threadsPerBlock, 1, 1}, args...)
}

// LaunchGrid queues kernel on an explicit grid.
func (l *lowering) LaunchGrid(kernel string, grid, block Dim3, args ...kernelArg) error {
	f, err := l.p.m.b.function(l.p.m.ord, kernel)
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

// gemmOp is a Gemm on operands: A, B and C are the first matrices (with
// the element offsets AOff, BOff, COff), the rest as in Gemm.
type gemmOp struct {
	Gemm
	OpA, OpB, OpC    operand
	AOff, BOff, COff int64 // elements
}

// Gemm queues a cuBLAS product, of float32 or float16 matrices as its
// operands are (A and B of one type).
func (l *lowering) Gemm(g gemmOp) error {
	if g.Batch == 0 {
		g.Batch = 1
	}
	if g.OpA.DType != g.OpB.DType {
		return l.Errorf(inference.ErrType, "product of %v and %v matrices", g.OpA.DType, g.OpB.DType)
	}
	g.InType, g.OutType = g.OpA.DType, g.OpC.DType
	if g.M == 0 || g.N == 0 {
		return nil
	}
	l.steps = append(l.steps, step{kind: stepGemm, gemm: g})
	return nil
}

// Copy queues a device copy of src's bytes into dst.
func (l *lowering) Copy(dst, src operand) error {
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
func (l *lowering) Scratch(dtype inference.DType, shape []int) operand {
	o := operand{Name: "(scratch)", DType: dtype, Shape: slices.Clone(shape)}
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
	args   []kernelArg
	gemm   gemmOp
	dst    loc
	src    loc
	bytes  int64
	host   *hostStep
}

// hostStep runs a node with the CPU reference kernel.
type hostStep struct {
	node *graph.Node
	why  string
	in   []operand
	out  []operand
}

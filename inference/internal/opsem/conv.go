package opsem

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Window is the geometry of a sliding window over the spatial dimensions
// of a convolution or a pool (and, read backwards, of a transposed
// convolution): window position o (an index into Out) reads, in dimension
// d, the input indices o·Stride[d] − PadBegin[d] + t·Dilation[d] for taps
// t = 0…Kernel[d]−1; indices outside [0, In[d]) fall in the padding.
type Window struct {
	In, Out, Kernel, Stride, Dilation, PadBegin, PadEnd []int
}

// intsAttr returns an integer-list attribute with want values, or want
// copies of def when the node lacks it (or gives an empty list). Each value
// is within ±(2³¹−1), so that the window arithmetic cannot overflow.
func intsAttr(n Node, name string, want, def int) ([]int, error) {
	v := n.Ints(name, nil)
	out := make([]int, want)
	if len(v) == 0 {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if len(v) != want {
		return nil, fmt.Errorf("attribute %s has %d values, want %d: %w", name, len(v), want, inference.ErrShape)
	}
	for i, x := range v {
		if x < -math.MaxInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("attribute %s %v: %d is out of range: %w", name, v, x, inference.ErrShape)
		}
		out[i] = int(x)
	}
	return out, nil
}

// KernelShape returns the window shape of a node over rank spatial
// dimensions: the kernel_shape attribute, which must agree with the
// weights' spatial shape w when that is known (non-nil; a Conv may leave
// the attribute out, a pool must give it).
func KernelShape(n Node, rank int, w []int) ([]int, error) {
	if !n.Has("kernel_shape") {
		if w == nil {
			return nil, fmt.Errorf("attribute kernel_shape is missing: %w", inference.ErrBadModel)
		}
		return w, nil
	}
	k, err := intsAttr(n, "kernel_shape", rank, 1)
	if err != nil {
		return nil, err
	}
	if w != nil && !slices.Equal(k, w) {
		return nil, fmt.Errorf("kernel_shape %v differs from the weights' spatial shape %v: %w", k, w, inference.ErrShape)
	}
	for _, d := range k {
		if d < 1 {
			return nil, fmt.Errorf("kernel_shape %v has a dimension < 1: %w", k, inference.ErrShape)
		}
	}
	return k, nil
}

// ConvOperands checks Conv's or (transposed) ConvTranspose's input X and
// weights W (equal ranks of 3 or more; W is [M, C/group, k…] for Conv and
// [C, M/group, k…] for ConvTranspose, with X [N, C, …]) and returns the
// group count (attribute group, default 1) and the kernel's spatial shape.
func ConvOperands(n Node, x, w []int, transposed bool) (group int, kernel []int, err error) {
	if len(x) < 3 || len(w) != len(x) {
		return 0, nil, fmt.Errorf("X is %v, W is %v; want equal ranks ≥ 3: %w", x, w, inference.ErrShape)
	}
	var c checked
	if group = c.toInt(n.Int("group", 1)); group < 1 || c.overflow {
		return 0, nil, fmt.Errorf("group %d, want a positive int: %w", n.Int("group", 1), inference.ErrShape)
	}
	if transposed {
		if w[0] != x[1] || x[1]%group != 0 {
			return 0, nil, fmt.Errorf("X is %v, W is %v, group %d: want W's dimension 0 = X's channels, divisible by group: %w", x, w, group, inference.ErrShape)
		}
	} else if x[1]%group != 0 || x[1]/group != w[1] || w[0]%group != 0 { // not w[1]·group, which may overflow
		return 0, nil, fmt.Errorf("X is %v, W is %v, group %d: want X's channels = W's dimension 1 × group and W's dimension 0 divisible by group: %w", x, w, group, inference.ErrShape)
	}
	kernel, err = KernelShape(n, len(x)-2, w[2:])
	return group, kernel, err
}

// windowAttrs reads the strides and dilations (default 1) and the pads
// (default 0; PadBegin and PadEnd are its halves) of a window of shape
// kernel over the spatial shape in, leaving Out to the caller. The
// dimensions of in and kernel, like the attributes (intsAttr), are below
// 2³¹, so that the window arithmetic cannot overflow.
func windowAttrs(n Node, in, kernel []int) (w Window, pads []int, err error) {
	r := len(in)
	for d := range r {
		if in[d] > math.MaxInt32 || kernel[d] > math.MaxInt32 {
			return w, nil, fmt.Errorf("spatial shape %v, kernel %v: a dimension is 2³¹ or more: %w", in, kernel, inference.ErrShape)
		}
	}
	w = Window{In: in, Kernel: kernel, Out: make([]int, r)}
	if w.Stride, err = intsAttr(n, "strides", r, 1); err != nil {
		return w, nil, err
	}
	if w.Dilation, err = intsAttr(n, "dilations", r, 1); err != nil {
		return w, nil, err
	}
	if pads, err = intsAttr(n, "pads", 2*r, 0); err != nil {
		return w, nil, err
	}
	w.PadBegin, w.PadEnd = pads[:r], pads[r:]
	return w, pads, nil
}

// SlidingWindow returns the window of Conv and the pools (MaxPool,
// AveragePool, LpPool), of shape kernel over the spatial shape in, from
// the attributes strides, dilations, pads and auto_pad. The output has
// floor((in + padBegin + padEnd − (kernel−1)·dilation − 1) / stride) + 1
// positions; ceil (the pools' ceil_mode) rounds up instead, dropping a last
// window that would start in the end padding. SAME_UPPER and SAME_LOWER
// give ceil(in/stride) positions, padding the odd element at the end or at
// the start; VALID pads nothing.
func SlidingWindow(n Node, in, kernel []int, ceil bool) (Window, error) {
	w, pads, err := windowAttrs(n, in, kernel)
	if err != nil {
		return w, err
	}
	r := len(in)
	for d := range r {
		if w.Stride[d] < 1 || w.Dilation[d] < 1 || w.PadBegin[d] < 0 || w.PadEnd[d] < 0 {
			return w, fmt.Errorf("strides %v, dilations %v, pads %v: strides and dilations must be ≥ 1, pads ≥ 0: %w", w.Stride, w.Dilation, pads, inference.ErrShape)
		}
	}
	switch auto := n.Str("auto_pad", "NOTSET"); auto {
	case "NOTSET", "":
	case "VALID":
		clear(pads)
	case "SAME_UPPER", "SAME_LOWER":
		for d := range r {
			var c checked
			size, s := int64(in[d]), int64(w.Stride[d])
			out := ceilDiv(size, s)
			total := max(0, c.sub(c.add(c.mul(out-1, s), w.reach(&c, d)), size))
			w.Out[d] = c.toInt(out)
			w.PadBegin[d] = c.toInt(total / 2)
			if auto == "SAME_LOWER" {
				w.PadBegin[d] = c.toInt(total - total/2)
			}
			w.PadEnd[d] = c.toInt(total - int64(w.PadBegin[d]))
			if c.overflow {
				return w, w.overflow(d)
			}
		}
		return w, nil
	default:
		return w, n.Unsupported("auto_pad %q", auto)
	}
	for d := range r {
		var c checked
		s := int64(w.Stride[d])
		span := c.sub(c.add(c.add(int64(in[d]), int64(w.PadBegin[d])), int64(w.PadEnd[d])), w.reach(&c, d))
		if c.overflow {
			return w, w.overflow(d)
		}
		if span < 0 {
			return w, fmt.Errorf("window %v (dilations %v) is larger than the padded input %v (pads %v): %w", kernel, w.Dilation, in, pads, inference.ErrShape)
		}
		out := c.add(span/s, 1)
		if ceil {
			out = c.add(ceilDiv(span, s), 1)
			if c.mul(out-1, s) >= c.add(int64(in[d]), int64(w.PadBegin[d])) {
				out--
			}
		}
		w.Out[d] = c.toInt(out)
		if c.overflow {
			return w, w.overflow(d)
		}
	}
	return w, nil
}

// reach is how far the window reaches in spatial dimension d, from its
// first tap to its last inclusive: (kernel−1)·dilation + 1.
func (w Window) reach(c *checked, d int) int64 {
	return c.add(c.mul(int64(w.Kernel[d]-1), int64(w.Dilation[d])), 1)
}

// overflow is the error of a window whose geometry in spatial dimension d
// does not fit int64.
func (w Window) overflow(d int) error {
	return fmt.Errorf("input %v, kernel %v, strides %v, dilations %v, pads %v %v: spatial dimension %d overflows: %w", w.In, w.Kernel, w.Stride, w.Dilation, w.PadBegin, w.PadEnd, d, inference.ErrShape)
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0 and b > 0, without the overflow of a + b − 1.
func ceilDiv(a, b int64) int64 {
	if a == 0 {
		return 0
	}
	return (a-1)/b + 1
}

// TransposedWindow returns the window of ConvTranspose, of shape kernel,
// whose output positions read the input of spatial shape in: Out is
// ConvTranspose's output shape. The full output is
// stride·(in−1) + output_padding + (kernel−1)·dilation + 1 long, less the
// pads; with output_shape (or SAME_UPPER/SAME_LOWER, whose output is
// in·stride) the pads are what makes the full output that long, split
// evenly (the odd one at the end for SAME_UPPER, else at the start). Pads
// may then be negative.
func TransposedWindow(n Node, in, kernel []int) (Window, error) {
	w, pads, err := windowAttrs(n, in, kernel)
	if err != nil {
		return w, err
	}
	r := len(in)
	outPad, err := intsAttr(n, "output_padding", r, 0)
	if err != nil {
		return w, err
	}
	for d := range r {
		if w.Stride[d] < 1 || w.Dilation[d] < 1 || outPad[d] < 0 {
			return w, fmt.Errorf("strides %v, dilations %v, output_padding %v: want strides and dilations ≥ 1, output_padding ≥ 0: %w", w.Stride, w.Dilation, outPad, inference.ErrShape)
		}
	}
	auto := n.Str("auto_pad", "NOTSET")
	switch auto {
	case "NOTSET", "", "VALID", "SAME_UPPER", "SAME_LOWER":
	default:
		return w, n.Unsupported("auto_pad %q", auto)
	}
	var target []int64
	switch {
	case n.Has("output_shape"):
		target = n.Ints("output_shape", nil)
		if len(target) == r+2 {
			target = target[2:]
		}
		if len(target) != r {
			return w, fmt.Errorf("output_shape %v for %d spatial dimensions: %w", target, r, inference.ErrShape)
		}
	case auto == "SAME_UPPER" || auto == "SAME_LOWER":
		target = make([]int64, r)
		for d := range r {
			var c checked
			if target[d] = c.mul(int64(in[d]), int64(w.Stride[d])); c.overflow {
				return w, w.overflow(d)
			}
		}
	}
	for d := range r {
		var c checked
		stretched := c.mul(int64(w.Stride[d]), int64(in[d]-1))
		full := c.add(c.add(stretched, int64(outPad[d])), w.reach(&c, d))
		if target == nil {
			if auto == "VALID" {
				w.PadBegin[d], w.PadEnd[d] = 0, 0
			}
			w.Out[d] = c.toInt(c.sub(c.sub(full, int64(w.PadBegin[d])), int64(w.PadEnd[d])))
		} else {
			total := c.sub(full, target[d])
			begin := total - floorDiv(total, 2)
			if auto == "SAME_UPPER" {
				begin = floorDiv(total, 2)
			}
			w.PadBegin[d], w.PadEnd[d] = c.toInt(begin), c.toInt(total-begin)
			w.Out[d] = c.toInt(target[d])
		}
		if c.overflow {
			return w, w.overflow(d)
		}
		if w.Out[d] < 0 {
			return w, fmt.Errorf("output size %d in spatial dimension %d is negative (input %v, kernel %v, pads %v): %w", w.Out[d], d, in, kernel, pads, inference.ErrShape)
		}
	}
	return w, nil
}

// floorDiv is a/b rounded toward −∞.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// PoolWindow returns the window of MaxPool, AveragePool and LpPool over an
// input X of shape x ([N, C, spatial…], rank 3 or more): kernel_shape
// (required), and ceil_mode (default 0) rounding the output up.
func PoolWindow(n Node, x []int) (Window, error) {
	if len(x) < 3 {
		return Window{}, fmt.Errorf("X is %v, want rank ≥ 3: %w", x, inference.ErrShape)
	}
	kernel, err := KernelShape(n, len(x)-2, nil)
	if err != nil {
		return Window{}, err
	}
	return SlidingWindow(n, x[2:], kernel, n.Int("ceil_mode", 0) != 0)
}

// PoolP is LpPool's p: an integer attribute (default 2) in the spec, a
// float in some exporters' models; it must be positive.
func PoolP(n Node) (float64, error) {
	p := float64(n.Int("p", 2))
	if a, ok := n.Attrs["p"]; ok && a.Type == graph.AttrFloat {
		p = float64(a.Float)
	}
	if p <= 0 {
		return 0, n.Unsupported("p = %g", p)
	}
	return p, nil
}

// PoolOptions are the pools' flags: whether AveragePool counts the padding
// in its divisor (count_include_pad, default 0), and whether MaxPool's
// Indices output counts in column-major order (storage_order 1; default 0,
// row-major).
func PoolOptions(n Node) (countIncludePad, columnMajor bool) {
	return n.Int("count_include_pad", 0) != 0, n.Int("storage_order", 0) == 1
}

package cpu

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Sliding-window geometry, shared by the convolutions (ops_conv.go) and the
// pooling operators (ops_pool.go): the window's shape, strides, dilations
// and pads, and the output positions they give.

// geom is the geometry of a sliding window over the spatial dimensions:
// window position o (an index into out) reads, in dimension d, the input
// indices o·stride[d] − padBegin[d] + t·dilation[d] for taps
// t = 0…kernel[d]−1; indices outside [0, in[d]) fall in the padding.
type geom struct {
	in, out, kernel, stride, dilation, padBegin, padEnd []int
}

// intsAttr returns an integer-list attribute with want values, or want
// copies of def when the node lacks it (or gives an empty list).
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
		out[i] = int(x)
	}
	return out, nil
}

// kernelShape returns the window shape: the kernel_shape attribute, which
// must agree with the weights' spatial shape w when that is known (non-nil).
func kernelShape(n Node, rank int, w []int) ([]int, error) {
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

// geomAttrs reads the strides and dilations (default 1) and the pads
// (default 0; padBegin and padEnd are its halves) of a window of shape
// kernel over the spatial shape in, leaving out to the caller.
func geomAttrs(n Node, in, kernel []int) (g geom, pads []int, err error) {
	r := len(in)
	g = geom{in: in, kernel: kernel, out: make([]int, r)}
	if g.stride, err = intsAttr(n, "strides", r, 1); err != nil {
		return g, nil, err
	}
	if g.dilation, err = intsAttr(n, "dilations", r, 1); err != nil {
		return g, nil, err
	}
	if pads, err = intsAttr(n, "pads", 2*r, 0); err != nil {
		return g, nil, err
	}
	g.padBegin, g.padEnd = pads[:r], pads[r:]
	return g, pads, nil
}

// windowGeom reads strides, dilations, pads and auto_pad for a window of
// shape kernel over the spatial shape in. Outputs have
// floor((in + padBegin + padEnd − (kernel−1)·dilation − 1) / stride) + 1
// positions; ceil rounds up instead, dropping a last window that would
// start in the end padding. SAME_UPPER and SAME_LOWER give ceil(in/stride)
// positions, padding the odd element at the end or at the start.
func windowGeom(n Node, in, kernel []int, ceil bool) (geom, error) {
	g, pads, err := geomAttrs(n, in, kernel)
	if err != nil {
		return g, err
	}
	r := len(in)
	for d := range r {
		if g.stride[d] < 1 || g.dilation[d] < 1 || g.padBegin[d] < 0 || g.padEnd[d] < 0 {
			return g, fmt.Errorf("strides %v, dilations %v, pads %v: strides and dilations must be ≥ 1, pads ≥ 0: %w", g.stride, g.dilation, pads, inference.ErrShape)
		}
	}
	switch auto := n.Str("auto_pad", "NOTSET"); auto {
	case "NOTSET", "":
	case "VALID":
		clear(pads)
	case "SAME_UPPER", "SAME_LOWER":
		for d := range r {
			s, eff := g.stride[d], (kernel[d]-1)*g.dilation[d]+1
			g.out[d] = (in[d] + s - 1) / s
			total := max(0, (g.out[d]-1)*s+eff-in[d])
			g.padBegin[d] = total / 2
			if auto == "SAME_LOWER" {
				g.padBegin[d] = total - total/2
			}
			g.padEnd[d] = total - g.padBegin[d]
		}
		return g, nil
	default:
		return g, Unsupported(n, "auto_pad %q", auto)
	}
	for d := range r {
		s, eff := g.stride[d], (kernel[d]-1)*g.dilation[d]+1
		span := in[d] + g.padBegin[d] + g.padEnd[d] - eff
		if span < 0 {
			return g, fmt.Errorf("window %v (dilations %v) is larger than the padded input %v (pads %v): %w", kernel, g.dilation, in, pads, inference.ErrShape)
		}
		if ceil {
			g.out[d] = (span+s-1)/s + 1
			if (g.out[d]-1)*s >= in[d]+g.padBegin[d] {
				g.out[d]--
			}
		} else {
			g.out[d] = span/s + 1
		}
	}
	return g, nil
}

package cuda

import "github.com/beamml/beamml/inference/internal/opsem"

// The sliding-window geometry of Conv, ConvTranspose and the pools, as
// nn.cu's conv_* and pool_* kernels take it: always three spatial
// dimensions. The geometry itself is opsem's (opsem.SlidingWindow,
// opsem.TransposedWindow, opsem.PoolWindow); kernelWindow pads it to the
// kernels' three dimensions.

// convWindow is the geometry of a sliding window over three spatial
// dimensions, as the kernels of nn.cu take it: a 1-D or 2-D window is
// padded on the left with dimensions of size 1 (kernel, stride and
// dilation 1, no padding). Output position o reads input o·stride −
// padBegin + t·dilation for taps t < kernel.
type convWindow struct {
	in, out, kernel, stride, dilation, padBegin, padEnd [3]int64
}

// kernelWindow returns the opsem window w as the kernels take it: 1 to 3
// spatial dimensions, each with a kernel of at least one tap.
func kernelWindow(l *lowering, w opsem.Window) (convWindow, error) {
	var cw convWindow
	r := len(w.In)
	if r < 1 || r > 3 {
		return cw, l.NoKernel("%d spatial dimensions, kernels take 1 to 3", r)
	}
	for d := range 3 {
		cw.in[d], cw.out[d], cw.kernel[d], cw.stride[d], cw.dilation[d] = 1, 1, 1, 1, 1
	}
	off := 3 - r
	for d := range r {
		if w.Kernel[d] < 1 {
			return cw, l.NoKernel("kernel %v has an empty dimension", w.Kernel)
		}
		cw.in[off+d], cw.out[off+d], cw.kernel[off+d] = int64(w.In[d]), int64(w.Out[d]), int64(w.Kernel[d])
		cw.stride[off+d], cw.dilation[off+d] = int64(w.Stride[d]), int64(w.Dilation[d])
		cw.padBegin[off+d], cw.padEnd[off+d] = int64(w.PadBegin[d]), int64(w.PadEnd[d])
	}
	return cw, nil
}

// spatialArgs passes each dimension of each of vs as a long long.
func spatialArgs(vs ...[3]int64) []kernelArg {
	var args []kernelArg
	for _, v := range vs {
		for _, d := range v {
			args = append(args, intArg(d))
		}
	}
	return args
}

// outIs reports whether the window's output is the spatial shape s.
func (w convWindow) outIs(s []int) bool {
	off := 3 - len(s)
	for d, v := range s {
		if w.out[off+d] != int64(v) {
			return false
		}
	}
	return true
}

// fits32 reports whether 32-bit index arithmetic over the window holds:
// the elements of the input (elems) and of the output or column matrix
// (total) fewer than 2^31, and every coordinate o·stride − padBegin +
// t·dilation within ±2^31 (conv_im2col32_f32).
func (w convWindow) fits32(elems, total int64) bool {
	const limit = 1 << 31
	if elems >= limit || total >= limit {
		return false
	}
	for d := range 3 {
		reach := (w.out[d]-1)*w.stride[d] + (w.kernel[d]-1)*w.dilation[d]
		if reach >= limit || w.padBegin[d] >= limit || w.in[d] >= limit {
			return false
		}
	}
	return true
}

package cuda

// The sliding-window geometry of Conv, ConvTranspose and the pools, as
// nn.cu's conv_* and pool_* kernels take it: always three spatial
// dimensions. slidingGeom mirrors the CPU's nnWindowGeom.

// convWindow is the geometry of a sliding window over three spatial
// dimensions, as the kernels of nn.cu take it: a 1-D or 2-D window is
// padded on the left with dimensions of size 1 (kernel, stride and
// dilation 1, no padding). Output position o reads input o·stride −
// padBegin + t·dilation for taps t < kernel.
type convWindow struct {
	in, out, kernel, stride, dilation, padBegin, padEnd [3]int64
}

// newConvWindow returns a window with every dimension at size 1, stride 1,
// dilation 1 and no padding.
func newConvWindow() convWindow {
	var w convWindow
	for d := range 3 {
		w.in[d], w.out[d], w.kernel[d], w.stride[d], w.dilation[d] = 1, 1, 1, 1, 1
	}
	return w
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

// spatialInts reads the integer-list attribute name: want values, or want
// copies of def when the node lacks it or gives an empty list. ok is false
// when the list has another length (the CPU kernel reports the error).
func spatialInts(l *lowering, name string, want int, def int64) (v []int64, ok bool) {
	v = l.Ints(name, nil)
	if len(v) == 0 {
		v = make([]int64, want)
		for i := range v {
			v[i] = def
		}
		return v, true
	}
	return v, len(v) == want
}

// windowAttrs reads strides, dilations and pads into a window over the
// spatial shape in with the given kernel.
func windowAttrs(l *lowering, in, kernel []int) (convWindow, error) {
	r := len(in)
	w := newConvWindow()
	if r < 1 || r > 3 {
		return w, l.NoKernel("%d spatial dimensions, kernels take 1 to 3", r)
	}
	strides, ok1 := spatialInts(l, "strides", r, 1)
	dilations, ok2 := spatialInts(l, "dilations", r, 1)
	pads, ok3 := spatialInts(l, "pads", 2*r, 0)
	if !ok1 || !ok2 || !ok3 {
		return w, l.NoKernel("strides %v, dilations %v, pads %v for %d spatial dimensions", strides, dilations, pads, r)
	}
	off := 3 - r
	for d := range r {
		w.in[off+d], w.kernel[off+d] = int64(in[d]), int64(kernel[d])
		w.stride[off+d], w.dilation[off+d] = strides[d], dilations[d]
		w.padBegin[off+d], w.padEnd[off+d] = pads[d], pads[r+d]
	}
	return w, nil
}

// slidingGeom is the CPU's nnWindowGeom: the geometry of Conv and the
// pools, with auto_pad and, for the pools, ceil_mode.
func slidingGeom(l *lowering, in, kernel []int, ceil bool) (convWindow, error) {
	w, err := windowAttrs(l, in, kernel)
	if err != nil {
		return w, err
	}
	for d := range 3 {
		if w.stride[d] < 1 || w.dilation[d] < 1 || w.padBegin[d] < 0 || w.padEnd[d] < 0 || w.kernel[d] < 1 {
			return w, l.NoKernel("strides %v, dilations %v, pads %v %v", w.stride, w.dilation, w.padBegin, w.padEnd)
		}
	}
	switch auto := l.Str("auto_pad", "NOTSET"); auto {
	case "NOTSET", "":
	case "VALID":
		w.padBegin, w.padEnd = [3]int64{}, [3]int64{}
	case "SAME_UPPER", "SAME_LOWER":
		for d := range 3 {
			s, eff := w.stride[d], (w.kernel[d]-1)*w.dilation[d]+1
			w.out[d] = (w.in[d] + s - 1) / s
			total := max(0, (w.out[d]-1)*s+eff-w.in[d])
			w.padBegin[d] = total / 2
			if auto == "SAME_LOWER" {
				w.padBegin[d] = total - total/2
			}
			w.padEnd[d] = total - w.padBegin[d]
		}
		return w, nil
	default:
		return w, l.NoKernel("auto_pad %q", auto)
	}
	for d := range 3 {
		s, eff := w.stride[d], (w.kernel[d]-1)*w.dilation[d]+1
		span := w.in[d] + w.padBegin[d] + w.padEnd[d] - eff
		if span < 0 {
			return w, l.NoKernel("window larger than the padded input")
		}
		if ceil {
			w.out[d] = (span+s-1)/s + 1
			if (w.out[d]-1)*s >= w.in[d]+w.padBegin[d] {
				w.out[d]--
			}
		} else {
			w.out[d] = span/s + 1
		}
	}
	return w, nil
}

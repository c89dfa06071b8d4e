package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the pooling operators (nn.cu pool_f32, pool_max_index_f32
// and pool_global_f32): MaxPool (with its Indices output), AveragePool,
// LpPool, GlobalAveragePool and GlobalMaxPool. The semantics are the CPU
// backend's (inference/cpu/ops_nn.go); the window geometry is window.go's.

func init() {
	registerLowering("MaxPool", func(l *lowering) error { return lowerPool(l, kernels.POOL_MAX) })
	registerLowering("AveragePool", func(l *lowering) error { return lowerPool(l, kernels.POOL_AVG) })
	registerLowering("LpPool", func(l *lowering) error { return lowerPool(l, kernels.POOL_LP) })
	registerLowering("GlobalAveragePool", func(l *lowering) error { return lowerGlobalPool(l, kernels.GPOOL_AVG) })
	registerLowering("GlobalMaxPool", func(l *lowering) error { return lowerGlobalPool(l, kernels.GPOOL_MAX) })
}

// lowerPool lowers MaxPool, AveragePool and LpPool to pool_f32, and
// MaxPool with its Indices output to pool_max_index_f32: one thread per
// output element walks its window.
func lowerPool(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	if x.Rank() < 3 || x.Rank() > 5 {
		return l.NoKernel("X %v: kernels take rank 3 to 5", x.Shape)
	}
	indices := kind == kernels.POOL_MAX && len(l.Out) > 1 && l.Out[1].Present()
	if indices && l.Out[1].DType != inference.Int64 {
		return l.NoKernel("Indices output of type %v", l.Out[1].DType)
	}
	r := x.Rank() - 2
	kernel, ok := spatialInts(l, "kernel_shape", r, 1)
	if !ok || !l.Node.Has("kernel_shape") {
		return l.NoKernel("kernel_shape %v for %d spatial dimensions", kernel, r)
	}
	kern := make([]int, r)
	for d, v := range kernel {
		kern[d] = int(v)
	}
	win, err := slidingGeom(l, x.Shape[2:], kern, l.Int("ceil_mode", 0) != 0)
	if err != nil {
		return err
	}
	if !win.outIs(y.Shape[2:]) || y.Rank() != x.Rank() {
		return l.NoKernel("geometry %v differs from the output %v", win.out, y.Shape)
	}
	p := float64(l.Int("p", 2))
	if a, ok := l.Node.Attrs["p"]; ok && a.Type == graph.AttrFloat {
		p = float64(a.Float)
	}
	if kind == kernels.POOL_LP && p <= 0 {
		return l.NoKernel("p = %g", p)
	}
	if indices {
		args := append([]kernelArg{ptrArg(y), ptrArg(l.Out[1]), ptrArg(x), intArg(y.Len())},
			spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin)...)
		return l.Launch(kernels.PoolMaxIndexF32, y.Len(), append(args, intArg(l.Int("storage_order", 0)))...)
	}
	args := append([]kernelArg{intArg(kind), ptrArg(y), ptrArg(x), intArg(y.Len())},
		spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin, win.padEnd)...)
	return l.Launch(kernels.PoolF32, y.Len(), append(args, intArg(l.Int("count_include_pad", 0)), floatArg(p))...)
}

// lowerGlobalPool reduces each plane with pool_global_f32, a block per
// plane.
func lowerGlobalPool(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	if x.Rank() < 2 {
		return l.NoKernel("X %v, want rank ≥ 2", x.Shape)
	}
	planes := int64(x.Shape[0]) * int64(x.Shape[1])
	if planes == 0 {
		return nil
	}
	return l.LaunchGrid(kernels.PoolGlobalF32, Dim3{X: uint32(min(planes, maxGrid))}, Dim3{X: threadsPerBlock},
		intArg(kind), ptrArg(y), ptrArg(x), intArg(planes), intArg(numElems(x.Shape[2:])))
}

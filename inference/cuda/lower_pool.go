package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the pooling operators (nn.cu pool_f32, pool_max_index_f32
// and pool_global_f32): MaxPool (with its Indices output), AveragePool,
// LpPool, GlobalAveragePool and GlobalMaxPool. The window geometry is
// opsem.PoolWindow's (window.go pads it to the kernels' three dimensions),
// LpPool's p opsem.PoolP's.

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
	g, err := opsem.PoolWindow(l.Node, x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	win, err := kernelWindow(l, g)
	if err != nil {
		return err
	}
	if y.Rank() != x.Rank() || !win.outIs(y.Shape[2:]) {
		return l.NoKernel("geometry %v differs from the output %v", win.out, y.Shape)
	}
	p := 0.0 // read by POOL_LP only
	if kind == kernels.POOL_LP {
		if p, err = opsem.PoolP(l.Node); err != nil {
			return l.NoKernel("%v", err)
		}
	}
	includePad, columnMajor := opsem.PoolOptions(l.Node)
	if indices {
		args := append([]kernelArg{ptrArg(y), ptrArg(l.Out[1]), ptrArg(x), intArg(y.Len())},
			spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin)...)
		return l.Launch(kernels.PoolMaxIndexF32, y.Len(), append(args, intArg(b2i(columnMajor)))...)
	}
	args := append([]kernelArg{intArg(kind), ptrArg(y), ptrArg(x), intArg(y.Len())},
		spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin, win.padEnd)...)
	return l.Launch(kernels.PoolF32, y.Len(), append(args, intArg(b2i(includePad)), floatArg(p))...)
}

// lowerGlobalPool reduces each plane with pool_global_f32, a block per
// plane.
func lowerGlobalPool(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 {
		return l.NoKernel("%v input", x.DType)
	}
	batch, channels, spatial, err := opsem.Channels(x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	planes := int64(batch) * int64(channels)
	if planes == 0 {
		return nil
	}
	return l.LaunchGrid(kernels.PoolGlobalF32, Dim3{X: uint32(min(planes, maxGrid))}, Dim3{X: threadsPerBlock},
		intArg(kind), ptrArg(y), ptrArg(x), intArg(planes), intArg(spatial))
}

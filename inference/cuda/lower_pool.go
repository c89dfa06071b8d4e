package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
	"github.com/beamml/beamml/internal/kernels"
)

// Lowerings of the pooling operators (nn.cu pool_f32, pool_max_index_f32
// and pool_global_f32, and their float16 forms pool_f16, …): MaxPool (with
// its Indices output), AveragePool, LpPool, GlobalAveragePool and
// GlobalMaxPool, on float32 or float16 X and Y. The window geometry is
// opsem.PoolWindow's (window.go pads it to the kernels' three dimensions),
// LpPool's p opsem.PoolP's.

func init() {
	registerLowering("MaxPool", func(l *lowering) error { return lowerPool(l, kernels.POOL_MAX) })
	registerLowering("AveragePool", func(l *lowering) error { return lowerPool(l, kernels.POOL_AVG) })
	registerLowering("LpPool", func(l *lowering) error { return lowerPool(l, kernels.POOL_LP) })
	registerLowering("GlobalAveragePool", func(l *lowering) error { return lowerGlobalPool(l, kernels.GPOOL_AVG) })
	registerLowering("GlobalMaxPool", func(l *lowering) error { return lowerGlobalPool(l, kernels.GPOOL_MAX) })
	registerHalf("MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool")
}

// checkPoolTypes checks that X and Y are both float32 or both float16, the
// types of the pool kernels' two forms.
func checkPoolTypes(l *lowering) error {
	x, y := l.In[0], l.Out[0]
	if x.DType != inference.Float32 && x.DType != inference.Float16 {
		return l.NoKernel("%v input", x.DType)
	}
	if y.DType != x.DType {
		return l.NoKernel("%v output of a %v input", y.DType, x.DType)
	}
	return nil
}

// lowerPool lowers MaxPool, AveragePool and LpPool to pool_f32 (or
// pool_f16), and MaxPool with its Indices output to pool_max_index_f32 (or
// pool_max_index_f16): one thread per output element walks its window.
func lowerPool(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	if err := checkPoolTypes(l); err != nil {
		return err
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
		k := halfKernel(kernels.PoolMaxIndexF32, kernels.PoolMaxIndexF16, x.DType)
		return l.Launch(k, y.Len(), append(args, intArg(b2i(columnMajor)))...)
	}
	args := append([]kernelArg{intArg(kind), ptrArg(y), ptrArg(x), intArg(y.Len())},
		spatialArgs(win.in, win.out, win.kernel, win.stride, win.dilation, win.padBegin, win.padEnd)...)
	k := halfKernel(kernels.PoolF32, kernels.PoolF16, x.DType)
	return l.Launch(k, y.Len(), append(args, intArg(b2i(includePad)), floatArg(p))...)
}

// lowerGlobalPool reduces each plane with pool_global_f32 (or
// pool_global_f16), a block per plane.
func lowerGlobalPool(l *lowering, kind int) error {
	x, y := l.In[0], l.Out[0]
	if err := checkPoolTypes(l); err != nil {
		return err
	}
	batch, channels, spatial, err := opsem.Channels(x.Shape)
	if err != nil {
		return l.NoKernel("%v", err)
	}
	planes := int64(batch) * int64(channels)
	if planes == 0 {
		return nil
	}
	k := halfKernel(kernels.PoolGlobalF32, kernels.PoolGlobalF16, x.DType)
	return l.LaunchGrid(k, Dim3{X: uint32(min(planes, maxGrid))}, Dim3{X: threadsPerBlock},
		intArg(kind), ptrArg(y), ptrArg(x), intArg(planes), intArg(spatial))
}

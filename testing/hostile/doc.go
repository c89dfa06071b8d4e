// Package hostile holds the hostile-model suite: ONNX models built to hurt
// the runtime that loads and runs them, and the behaviour the runtime owes
// each of them. It has no code of its own; the tests are the package. They
// are for the engineers who change the decoder, the graph passes and the
// CPU kernels: a case here states what a model may at most cost and how it
// must fail.
//
// Run it with
//
//	go test ./testing/hostile/
//
// The classes it covers:
//
//   - Memory bombs at run time (TestMemoryBombs): a small input asks an
//     operator (Expand, ConstantOfShape, Tile, Resize, OneHot, Range,
//     MatMul) for about 10¹² elements, or for more than int64 counts. The
//     run fails with an error wrapping inference.ErrResourceExhausted (an
//     *inference.ResourceError naming the node, over the run's budget), or
//     inference.ErrShape where the size overflows.
//   - Tensors of no elements with huge dimensions (TestEmptyTensors):
//     float32[0, 2⁶²] through the operators that iterate over dimensions.
//     Each returns ONNX's empty result where ONNX defines one, and a clear
//     error where the result would hold 2⁶² elements or a dimension int64
//     cannot hold. None may loop over the huge dimension.
//   - Range and Pad operands at the edges of their types (TestEdgeOperands):
//     Inf and NaN, MinInt64 and MaxInt64 fail with an error, never with a
//     panic or an empty tensor.
//   - Models that must not load (TestLoadRefuses, and TestFIFOExternalData
//     on unix): constant folding that would fill terabytes, duplicate or
//     overwritten names, input shapes whose size overflows, unknown
//     opsets, and external data that is a FIFO all fail with
//     inference.ErrBadModel.
//     Large and deep graphs (TestLoadScales) load, or fail cleanly, in
//     memory proportional to the file.
//   - Tree ensembles of ai.onnx.ml whose attributes lie
//     (TestTreeEnsemblesRefused): cycles, children, roots, targets and
//     classes out of range (10⁹, 10¹⁸), 10⁹ declared targets, lists of
//     different lengths. Each fails to load with inference.ErrBadModel
//     naming the node and the attribute, allocating nothing by what it
//     declares; a tree that is a chain of 200,000 nodes loads and runs
//     (TestTreeEnsembleChain).
//   - Loops that never end or grow without bound (TestLoops) stop at the
//     context's deadline or at the memory budget.
//   - An initializer that is also a graph input (TestInitializerAsInput) is
//     the input's default: a feed overrides it.
//
// How a case is checked. Each case runs in a process of its own (the test
// binary runs itself for the one case), so that a case that crashes, hangs
// or allocates without bound costs only itself and the machine stays
// usable. Inside, the load and the run go on in a goroutine under a
// context with a memory budget of 64 MiB and a deadline (10 s; 500 ms for
// the endless Loop, 1 min for the 100,000-node load); a case that has not
// returned 5 s after its deadline fails as a hang. A sampler reads the
// heap (runtime/metrics /memory/classes/heap/objects:bytes) every
// millisecond from a baseline taken after a collection, and a case whose
// heap grows more than its bound fails. The bound is 256 MiB for most, 4×
// the budget: the budget's live intermediates, as much garbage again
// before the collector runs, and the model and its feeds, while every bomb
// asks for at least 2 GiB; for the large and deep graphs it is 64× the
// file's size. A heap that grows past 1 GiB (or twice a larger bound)
// stops the process at once. With -v each case logs its heap growth and
// the error it got.
//
// Setting HOSTILE_IN_PROCESS=1 runs the cases in the test process itself,
// to debug one under a debugger, or with
//
//	HOSTILE_IN_PROCESS=1 go test -run 'TestMemoryBombs/^Expand_1e12$' ./testing/hostile/
//
// The tests assert no timings: the deadlines bound hangs, which are
// failures of correctness.
package hostile

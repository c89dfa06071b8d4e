package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

func TestBatchNorm(t *testing.T) {
	x := tensorOf[float32](t, []int{1, 2, 2}, 1, 3, 10, 20)
	p := func(a, b float32) inference.Tensor { return tensorOf[float32](t, []int{2}, a, b) }
	scale, bias, mean, variance := p(2, 1), p(0, 1), p(2, 10), p(4, 100)
	n := testNode("BatchNormalization", 15, map[string]graph.Attr{"epsilon": attrFloat(0)}, 1)
	// channel 0: 2·(x-2)/2, channel 1: (x-10)/10 + 1.
	checkFloats(t, runKernel(t, n, x, scale, bias, mean, variance)[0], []int{1, 2, 2}, -1, 1, 1, 2)

	// training_mode=1 normalises with the batch's statistics (channel 0:
	// mean 2, variance 1; channel 1: mean 15, variance 25) and returns the
	// running statistics moved by momentum 0.9 towards them.
	train := testNode("BatchNormalization", 15, map[string]graph.Attr{"training_mode": attrInt(1), "epsilon": attrFloat(0)}, 3)
	outs := runKernel(t, train, x, scale, bias, mean, variance)
	checkFloats(t, outs[0], []int{1, 2, 2}, -2, 2, 0, 2)
	checkFloats(t, outs[1], []int{2}, 2, 10.5)
	checkFloats(t, outs[2], []int{2}, 3.7, 92.5)
	old := testNode("BatchNormalization", 9, nil, 3)
	if _, err := kernels["BatchNormalization"](old, []inference.Tensor{x, scale, bias, mean, variance}); !errors.Is(err, inference.ErrUnsupportedOp) {
		t.Errorf("training outputs at opset 9: err = %v, want ErrUnsupportedOp", err)
	}
	if _, err := kernels["BatchNormalization"](n, []inference.Tensor{x, scale, bias, mean, tensorOf[float32](t, []int{1}, 1)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("var of 1 element for 2 channels: err = %v, want ErrShape", err)
	}
}

func TestLayerNorm(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 2}, 1, 3, 0, 4)
	scale := tensorOf[float32](t, []int{2}, 1, 2)
	bias := tensorOf[float32](t, []int{2}, 0, 1)
	n := testNode("LayerNormalization", 17, map[string]graph.Attr{"epsilon": attrFloat(0)}, 3)
	out := runKernel(t, n, x, scale, bias)
	// row 0: mean 2, σ 1; row 1: mean 2, σ 2.
	checkFloats(t, out[0], []int{2, 2}, -1, 3, -1, 3)
	checkFloats(t, out[1], []int{2, 1}, 2, 2)
	checkFloats(t, out[2], []int{2, 1}, 1, 0.5)

	rms := runKernel(t, testNode("RMSNormalization", 23, map[string]graph.Attr{"epsilon": attrFloat(0)}, 1), tensorOf[float32](t, []int{2}, 3, 4), scale)
	r := float32(math.Sqrt(12.5))
	checkFloats(t, rms[0], []int{2}, 3/r, 8/r)
}

func TestGroupNormOpsets(t *testing.T) {
	// Two channels of two elements each, one group per channel.
	x := tensorOf[float32](t, []int{1, 2, 2}, 1, 3, 0, 4)
	scale := tensorOf[float32](t, []int{2}, 1, 2)
	bias := tensorOf[float32](t, []int{2}, 0, 1)
	attrs := map[string]graph.Attr{"num_groups": attrInt(2), "epsilon": attrFloat(0)}
	checkFloats(t, runKernel(t, testNode("GroupNormalization", 21, attrs, 1), x, scale, bias)[0], []int{1, 2, 2}, -1, 1, -1, 3)

	// One group: opset 18 takes scale and bias per group, opset 21 per
	// channel. Mean 2, σ² = (1+1+4+4)/4 = 2.5.
	one := map[string]graph.Attr{"num_groups": attrInt(1), "epsilon": attrFloat(0)}
	s := float32(math.Sqrt(2.5))
	g18 := runKernel(t, testNode("GroupNormalization", 18, one, 1), x, tensorOf[float32](t, []int{1}, 2), tensorOf[float32](t, []int{1}, 1))
	checkFloats(t, g18[0], []int{1, 2, 2}, -2/s+1, 2/s+1, -4/s+1, 4/s+1)
	if _, err := kernels["GroupNormalization"](testNode("GroupNormalization", 21, one, 1), []inference.Tensor{x, tensorOf[float32](t, []int{1}, 2), tensorOf[float32](t, []int{1}, 1)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("opset 21 with per-group scale: err = %v, want ErrShape", err)
	}
}

func TestLpNormAndLRN(t *testing.T) {
	x := tensorOf[float32](t, []int{2, 2}, 3, -1, 0, 0)
	out := runKernel(t, testNode("LpNormalization", 22, map[string]graph.Attr{"p": attrInt(1)}, 1), x)
	checkFloats(t, out[0], []int{2, 2}, 0.75, -0.25, 0, 0)

	// size 3 over 2 channels: every channel sums both squares.
	y := tensorOf[float32](t, []int{1, 2, 1}, 1, 2)
	attrs := map[string]graph.Attr{"size": attrInt(3), "alpha": attrFloat(3), "beta": attrFloat(1), "bias": attrFloat(1)}
	checkFloats(t, runKernel(t, testNode("LRN", 13, attrs, 1), y)[0], []int{1, 2, 1}, 1.0/6, 2.0/6)
}

// BatchNormalization over planes long enough for the vector loops (and
// short ones, scalar), batches of 1 and 3, against its definition in
// float64: rtol 1e-5, atol 1e-6 (a·x + b rounded twice in float32).
func TestBatchNormPlanes(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, shape := range [][]int{{1, 3, 7, 9}, {3, 5, 4, 4}, {2, 4, 3}, {2, 6}} {
		c := shape[1]
		x := nnRandom(r, opsem.Count(shape))
		ps := make([][]float32, 4)
		for i := range ps {
			ps[i] = nnRandom(r, c)
		}
		for i := range ps[3] {
			ps[3][i] = ps[3][i]*ps[3][i] + 0.1 // variances
		}
		p := func(i int) inference.Tensor { return tensorOf(t, []int{c}, ps[i]...) }
		n := testNode("BatchNormalization", 15, map[string]graph.Attr{"epsilon": attrFloat(1e-5)}, 1)
		got := dataOf[float32](runKernel(t, n, tensorOf(t, shape, x...), p(0), p(1), p(2), p(3))[0])
		plane := opsem.Count(shape[2:])
		for i, v := range x {
			ch := i / plane % c
			eps := float64(float32(1e-5))
			want := float64(ps[0][ch])*(float64(v)-float64(ps[2][ch]))/math.Sqrt(float64(ps[3][ch])+eps) + float64(ps[1][ch])
			if math.Abs(float64(got[i])-want) > 1e-6+1e-5*math.Abs(want) {
				t.Fatalf("shape %v: element %d = %v, want %v", shape, i, got[i], want)
			}
		}
	}
}

// TestLayerNormRows checks LayerNormalization's and RMSNormalization's
// vector path (scale and B as long as a row) against float64 on rows of 1
// to 3,072 elements, about 0 and about offsets of 1,000 and −30,000 (the
// noise ±1), with and without B: each output within 2⁻¹⁸ (3.8e-6) of
// max(1, |want|)·max(1, |scale|), and the statistics within 2⁻¹⁸ of
// max(1, |want|). (Taking the mean off in one float32 step would miss by
// up to half an ulp of 30,000, 1e-3, on the offset rows.)
func TestLayerNormRows(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, size := range []int{1, 3, 7, 8, 9, 31, 33, 64, 100, 768, 1000, 3072} {
		for _, offset := range []float64{0, 1000, -30000} {
			for _, rms := range []bool{false, true} {
				for _, withBias := range []bool{false, true} {
					if rms && (withBias || offset != 0) {
						continue // RMSNormalization has no B; and about 0 only
					}
					rows := 3
					xd := make([]float32, rows*size)
					for i := range xd {
						xd[i] = float32(offset + 2*r.Float64() - 1)
					}
					sd, bd := make([]float32, size), make([]float32, size)
					for i := range sd {
						sd[i], bd[i] = float32(4*r.Float64()-2), float32(2*r.Float64()-1)
					}
					in := []inference.Tensor{tensorOf(t, []int{rows, size}, xd...), tensorOf(t, []int{size}, sd...)}
					op, opset := "LayerNormalization", int64(17)
					if rms {
						op, opset = "RMSNormalization", 23
					}
					if withBias {
						in = append(in, tensorOf(t, []int{size}, bd...))
					}
					outs := 1
					if !rms {
						outs = 3
					}
					got := runKernel(t, testNode(op, opset, map[string]graph.Attr{"epsilon": attrFloat(1e-5)}, outs), in...)
					y := floatsOf(t, got[0])
					for row := range rows {
						x := xd[row*size : (row+1)*size]
						var mean, sq float64
						if !rms {
							for _, v := range x {
								mean += float64(v)
							}
							mean /= float64(size)
						}
						for _, v := range x {
							sq += (float64(v) - mean) * (float64(v) - mean)
						}
						inv := 1 / math.Sqrt(sq/float64(size)+1e-5)
						if !rms {
							m, i := floatsOf(t, got[1])[row], floatsOf(t, got[2])[row]
							if d := math.Abs(float64(m) - mean); d > 0x1p-18*max(1, math.Abs(mean)) {
								t.Fatalf("size %d offset %v: row %d mean %v, want %v", size, offset, row, m, mean)
							}
							if d := math.Abs(float64(i) - inv); d > 0x1p-18*max(1, inv) {
								t.Fatalf("size %d offset %v: row %d inverse deviation %v, want %v", size, offset, row, i, inv)
							}
						}
						for i, v := range x {
							want := (float64(v) - mean) * inv * float64(sd[i])
							if withBias {
								want += float64(bd[i])
							}
							tol := 0x1p-18 * max(1, math.Abs(want)) * max(1, math.Abs(float64(sd[i])))
							if g := float64(y[row*size+i]); !(math.Abs(g-want) <= tol) {
								t.Fatalf("%s size %d offset %v bias %v: y[%d][%d] = %v, want %v ± %.2g", op, size, offset, withBias, row, i, g, want, tol)
							}
						}
					}
				}
			}
		}
	}
}

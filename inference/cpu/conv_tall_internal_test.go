package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// TestTallKernels checks each tall kernel this CPU runs against nnTallGo,
// its contract in Go: positions anywhere in the source (in any order,
// repeated), offsets in any order, kc from 0 to two blocks' worth with
// every remainder of the unrolled loop, set and add, and C's elements
// outside the tile untouched. The sums run over the same steps in the
// same order, the kernel's fused multiply-adds rounding once per step
// where Go rounds twice: within 1e-6·(1 + kc) of each other on values
// in [-1, 1).
func TestTallKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	tested := 0
	for _, kern := range nnKernels() {
		if kern.tall == nil {
			continue
		}
		tested++
		mr, nr := kern.mr, kern.nr
		ref := nnTallGo(mr, nr)
		for _, kc := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 64, 255, 256} {
			for _, set := range []bool{false, true} {
				b := nnRandom(r, 1000)
				pos, off := make([]int32, mr), make([]int32, kc)
				for i := range pos {
					pos[i] = int32(r.IntN(500))
				}
				for p := range off {
					off[p] = int32(r.IntN(500))
				}
				wp := nnRandom(r, kc*nr)
				ldc := nr + 3
				got := nnRandom(r, 2+mr*ldc+2)
				want := append([]float32(nil), got...)
				kern.tall(kc, b, pos, off, wp, got[2:2+(mr-1)*ldc+nr], ldc, set)
				ref(kc, b, pos, off, wp, want[2:2+(mr-1)*ldc+nr], ldc, set)
				for e := range got {
					if d := math.Abs(float64(got[e] - want[e])); !(d <= 1e-6*float64(1+kc)) {
						t.Fatalf("%s tall kc=%d set=%v: element %d (row %d, col %d) = %g, want %g", kern.name, kc, set, e, (e-2)/ldc, (e-2)%ldc, got[e], want[e])
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no tall kernel on this CPU or build (TestConvTallGo runs cvTall's loops with the Go kernel)")
	}
}

// cvTallCases are convolutions for cvTall's tests; wantInPlace says
// whether the plan runs the product on its side (where the CPU's best
// kernel has a tall kernel).
var cvTallCases = []cvInPlaceCase{
	{"3x3 pad 1 on 7x7 (ResNet's last stage)", []int{1, 32, 7, 7}, []int{64, 32, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 stride 2 pad 1, 14x14 to 7x7", []int{1, 16, 14, 14}, []int{32, 16, 3, 3}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"3x3 valid on 9x9: reads the image", []int{1, 8, 9, 9}, []int{32, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, false, true, false},
	{"5x5 dilation 2 pad 4 on 12x12", []int{1, 8, 12, 12}, []int{32, 8, 5, 5}, [2]int64{1, 1}, [2]int64{2, 2}, [4]int64{4, 4, 4, 4}, 1, true, true, false},
	{"grouped 3x3, two groups of 32, batch 2", []int{2, 16, 10, 10}, []int{64, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 2, true, true, false},
	{"1x1 stride 2 (a downsample): one phase of four", []int{1, 64, 14, 14}, []int{32, 64, 1, 1}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{}, 1, true, true, false},
	{"3x3 stride 3, asymmetric pads", []int{1, 8, 20, 20}, []int{32, 8, 3, 3}, [2]int64{3, 3}, [2]int64{1, 1}, [4]int64{1, 0, 2, 1}, 1, true, true, false},
	{"3x3 pad 1 on 40x40: seven chunks of positions", []int{1, 8, 40, 40}, []int{32, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, true, false},
	{"1x1 on 7x7, 1024 rows: 49 positions in 56, not 64", []int{1, 1024, 7, 7}, []int{64, 1024, 1, 1}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, true, true, false},
	{"1x1 on 7x7, 464 rows: too few steps to pay, SGEMM", []int{1, 464, 7, 7}, []int{64, 464, 1, 1}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, true, false, false},
	{"3x3 rate 12 pad 12 on 8x8: the padded copy 16 images, SGEMM", []int{1, 80, 8, 8}, []int{32, 80, 3, 3}, [2]int64{1, 1}, [2]int64{12, 12}, [4]int64{12, 12, 12, 12}, 1, true, false, false},
	{"1x1 on 16x16: whole panels, SGEMM", []int{1, 80, 16, 16}, []int{32, 80, 1, 1}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{}, 1, true, false, false},
	{"24 output channels: SGEMM", []int{1, 8, 7, 7}, []int{24, 8, 3, 3}, [2]int64{1, 1}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, false, false},
	{"a stem, 27 rows: SGEMM", []int{1, 3, 32, 32}, []int{32, 3, 3, 3}, [2]int64{2, 2}, [2]int64{1, 1}, [4]int64{1, 1, 1, 1}, 1, true, false, false},
}

// TestConvTall runs compiled Convs (W packed at compile time) with a
// residual Add and a Relu fused in, on their side where the plan says so
// (and through SGEMM where it does not), at 1 and 2 threads, against the
// float64 loop (rtol 1e-4, atol 1e-4: sums of up to 1024 products of
// values in [-1, 1)): positions from the image or its padded, phased copy,
// padding positions past the last tile, chunks of positions, groups,
// batches, the transposition into the output planes with the bias and
// the epilogue after.
func TestConvTall(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, tc := range cvTallCases {
		t.Run(tc.name, func(t *testing.T) {
			cvCheckCompiled(t, r, tc, func(t *testing.T, plan *cvPlan) {
				if nnBestKernel.tall != nil {
					if got := plan.gemm.tall != nil; got != tc.wantInPlace {
						t.Fatalf("on its side: %v, want %v", got, tc.wantInPlace)
					}
				} else if plan.gemm.tall != nil {
					t.Fatalf("on its side without a tall kernel (%s)", nnBestKernel.name)
				}
			})
		})
	}
}

// TestConvTallGo runs cvTall's loops with nnTallGo as the kernel, on any
// CPU: the plans of cvTallCases made with the AVX-512 kernel's tiles
// (8×32), against the float64 loop.
func TestConvTallGo(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	kern := nnKernel{name: "go tall", mr: 8, nr: 32, kernel: nnMicroKernel, half: nnMicroKernel, tall: nnTallGo(8, 32)}
	for _, tc := range cvTallCases {
		if !tc.wantInPlace {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			n := testNode("Conv", 11, tc.attrs(), 1)
			x, w := nnRandom(r, opsem.Count(tc.xs)), nnRandom(r, opsem.Count(tc.ws))
			var bias []float32
			if tc.bias {
				bias = nnRandom(r, tc.ws[0])
			}
			xt, wt := tensorOf(t, tc.xs, x...), tensorOf(t, tc.ws, w...)
			plan, err := newCvPlan(n, []inference.Tensor{xt, wt}, nil, xt, wt)
			if err != nil {
				t.Fatal(err)
			}
			c := plan.gemm
			if c.tall = newCvTall(c, kern, w); c.tall == nil {
				t.Fatal("not on its side")
			}
			for u := range c.units {
				c.units[u].tallJob = newCvTallJob(c.tall, c.osp)
			}
			out := make([]float32, opsem.Count(plan.geo.out))
			for i := range out {
				out[i] = float32(math.NaN()) // every element must be written
			}
			if err := c.run(nil, x, w, nil, bias, out); err != nil {
				t.Fatal(err)
			}
			want := cvDirectConv(tc.xs, tc.ws, x, w, bias, plan.geo.g, tc.group)
			cvCheckNearTol(t, fmt.Sprintf("%s out", tc.name), out, want, 1e-4, 1e-4)
		})
	}
}

// TestConvTallHostileShapes plans convolutions whose shapes claim far more
// than exists (a batch of 0 over 2³⁰×2³⁰ maps; pads of 2⁴⁰ around a 2×2
// image) with a constant W: the plan must not build position tables for
// the claimed maps (cvTall leaves them to the other paths), and the run
// ends with an empty output or an error, not a hang or an exhausted heap.
func TestConvTallHostileShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []int
		pads [4]int64
	}{
		{"a batch of 0 over 2^30 x 2^30", []int{0, 32, 1 << 30, 1 << 30}, [4]int64{1, 1, 1, 1}},
		{"pads of 2^40 around 2x2", []int{1, 32, 2, 2}, [4]int64{1 << 40, 1 << 40, 1 << 40, 1 << 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := []int{32, 32, 3, 3}
			w := make([]float32, opsem.Count(ws))
			n := testNode("Conv", 13, map[string]graph.Attr{"pads": attrInts(tc.pads[:]...)}, 1)
			g := &graph.Graph{Name: "c", Opsets: map[string]int64{"": 13}, Initializers: map[string]inference.Tensor{"w": tensorOf(t, ws, w...)},
				Nodes: []*graph.Node{{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"y"}, Attrs: n.Attrs}}}
			xt, err := inference.New(tc.xs, make([]float32, opsem.Count(tc.xs)))
			if err != nil {
				t.Fatal(err)
			}
			prep := &cvPrepared{packs: convPacks(g, g.Nodes[0], nnBestKernel)}
			plan, err := newCvPlan(n, []inference.Tensor{xt, tensorOf(t, ws, w...)}, prep, xt, tensorOf(t, ws, w...))
			if err != nil {
				return // refused at planning: fine
			}
			if plan.gemm != nil && plan.gemm.tall != nil {
				t.Fatalf("on its side, with %d positions", len(plan.gemm.tall.pos))
			}
		})
	}
}

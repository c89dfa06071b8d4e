package passes_test

import (
	"testing"

	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
)

// Folding changes the rounding: W·a is rounded once to float32 where the
// unfolded graph rounds the convolution and then the normalisation. The
// outputs, of magnitude up to ~10, agree to a few float32 ulps; the
// tolerance is the package's (rtol 1e-4, atol 1e-5).

// batchNorm appends a BatchNormalization of x over channels with random
// statistics (a positive variance) and returns its output and the names
// of its inputs.
func batchNorm(m *model, x string, channels int, bnAttrs map[string]graph.Attr) (string, []string) {
	scale := m.constant("bn_scale", []int{channels})
	bias := m.constant("bn_bias", []int{channels})
	mean := m.constant("bn_mean", []int{channels})
	v := m.randoms(channels)
	for i := range v {
		v[i] = v[i]*v[i] + 0.1
	}
	variance := m.constant("bn_var", []int{channels}, v...)
	return m.op("BatchNormalization", bnAttrs, x, scale, bias, mean, variance), []string{scale, bias, mean, variance}
}

func TestFoldBatchNormConv(t *testing.T) {
	for _, tc := range []struct {
		name string
		bias bool
		attr map[string]graph.Attr
	}{
		{"bias", true, nil},
		{"no bias, epsilon", false, attrs("epsilon", aFloat(1e-3))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *model {
				m := newModel(15)
				in := []string{m.input("x", 2, 3, 5, 5), m.constant("w", []int{4, 3, 3, 3})}
				if tc.bias {
					in = append(in, m.constant("b", []int{4}))
				}
				c := m.op("Conv", attrs("pads", aInts(1, 1, 1, 1)), in...)
				y, _ := batchNorm(m, c, 4, tc.attr)
				m.output(m.op("Relu", nil, y))
				return m
			}
			g := rewrite(t, build, passes.FoldBatchNorm(), "Conv Relu", rtol, atol)
			for _, name := range []string{"w", "b", "bn_scale", "bn_var"} {
				if _, ok := g.Initializers[name]; ok {
					t.Errorf("initializer %q still there after the fold", name)
				}
			}
		})
	}
}

// ConvTranspose folds along its W's second axis, per group: output
// channel g·(M/group) + j is W[c, j, …] for the input channels c of group
// g.
func TestFoldBatchNormConvTranspose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group int
		bias  bool
	}{
		{"bias", 1, true},
		{"no bias", 1, false},
		{"groups", 2, true},
		{"depthwise", 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *model {
				m := newModel(17)
				const chans, out = 4, 6
				per := out / tc.group
				if tc.group == 4 {
					per = 1
				}
				in := []string{m.input("x", 2, chans, 5, 5), m.constant("w", []int{chans, per, 3, 3})}
				if tc.bias {
					in = append(in, m.constant("b", []int{per * tc.group}))
				}
				c := m.op("ConvTranspose", attrs("strides", aInts(2, 2), "pads", aInts(1, 1, 1, 1), "output_padding", aInts(1, 1), "group", aInt(int64(tc.group))), in...)
				y, _ := batchNorm(m, c, per*tc.group, nil)
				m.output(m.op("Relu", nil, y))
				return m
			}
			g := rewrite(t, build, passes.FoldBatchNorm(), "ConvTranspose Relu", rtol, atol)
			for _, name := range []string{"w", "b", "bn_scale", "bn_var"} {
				if _, ok := g.Initializers[name]; ok {
					t.Errorf("initializer %q still there after the fold", name)
				}
			}
		})
	}
}

// Gemm folds along its output columns: B's columns, or its rows when
// transB, and C of one value per column or one value, scaled by beta.
func TestFoldBatchNormGemm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		transB bool
		c      []int // C's shape; nil for none
	}{
		{"no C", false, nil},
		{"transB, C [N]", true, []int{5}},
		{"C [1 N]", false, []int{1, 5}},
		{"scalar C", true, []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func() *model {
				m := newModel(13)
				b := []int{4, 5}
				a := attrs("beta", aFloat(0.5), "alpha", aFloat(1.5))
				if tc.transB {
					b = []int{5, 4}
					a["transB"] = aInt(1)
				}
				in := []string{m.input("x", 3, 4), m.constant("B", b)}
				if tc.c != nil {
					in = append(in, m.constant("C", tc.c))
				}
				y, _ := batchNorm(m, m.op("Gemm", a, in...), 5, nil)
				m.output(y)
				return m
			}
			rewrite(t, build, passes.FoldBatchNorm(), "Gemm", rtol, atol)
		})
	}
}

// What the fold needs: the Conv's output read by the BatchNormalization
// alone, constant weights and statistics, inference mode.
func TestFoldBatchNormLeavesAlone(t *testing.T) {
	conv := func(m *model) string {
		return m.op("Conv", nil, m.input("x", 1, 2, 4, 4), m.constant("w", []int{3, 2, 1, 1}))
	}
	for _, tc := range []struct {
		name  string
		build func() *model
	}{
		{"Conv output read twice", func() *model {
			m := newModel(15)
			c := conv(m)
			y, _ := batchNorm(m, c, 3, nil)
			m.output(m.op("Add", nil, y, c))
			return m
		}},
		{"Conv output is a graph output", func() *model {
			m := newModel(15)
			c := conv(m)
			y, _ := batchNorm(m, c, 3, nil)
			m.output(y, c)
			return m
		}},
		{"overridable statistic", func() *model {
			m := newModel(15)
			y, in := batchNorm(m, conv(m), 3, nil)
			m.overridable(in[3])
			m.output(y)
			return m
		}},
		{"weights fed", func() *model {
			m := newModel(15)
			y, _ := batchNorm(m, m.op("Conv", nil, m.input("x", 1, 2, 4, 4), m.input("w", 3, 2, 1, 1)), 3, nil)
			m.output(y)
			return m
		}},
		{"training", func() *model {
			m := newModel(15)
			y, _ := batchNorm(m, conv(m), 3, attrs("training_mode", aInt(1)))
			m.output(y)
			return m
		}},
		{"not after a Conv or Gemm", func() *model {
			m := newModel(15)
			y, _ := batchNorm(m, m.op("Relu", nil, m.input("x", 1, 3, 4, 4)), 3, nil)
			m.output(y)
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { unchanged(t, tc.build, passes.FoldBatchNorm()) })
	}
}

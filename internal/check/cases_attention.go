package check

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// Cases of Attention-23 (norm.cu attention_softmax_f32 between two GEMMs;
// lower_attention.go): 4-D and 3-D inputs, grouped query attention, the
// scale and softcap attributes, float masks that broadcast over batches,
// heads and queries, a bool mask shorter than the keys (the rest masked),
// the causal bias, a row masked everywhere (zero weights), and rows longer
// than a block.
func init() {
	type attrs = map[string]graph.Attr
	qkv := func(seed uint64, q, k, v []int) []Input {
		return []Input{{T: Rand(seed, -1, 1, q...)}, {T: Rand(seed+1, -1, 1, k...)}, {T: Rand(seed+2, -1, 1, v...)}}
	}
	bools := func(shape []int, f func(i int) bool) inference.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]bool, n)
		for i := range v {
			v[i] = f(i)
		}
		t, err := inference.New(shape, v)
		if err != nil {
			panic(err)
		}
		return t
	}
	at := func(name string, in []Input, a attrs) Case {
		return Case{Name: "attention/Attention/" + name, Op: "Attention", Opset: 23, Attrs: a, Inputs: in}
	}
	Add(
		at("4d", qkv(1, []int{2, 3, 5, 8}, []int{2, 3, 7, 8}, []int{2, 3, 7, 6}), nil),
		at("4d-float-mask", append(qkv(4, []int{2, 2, 4, 8}, []int{2, 2, 6, 8}, []int{2, 2, 6, 8}),
			Input{T: Rand(7, -2, 0, 2, 1, 4, 6)}), attrs{"scale": AFloat(0.3)}),
		at("4d-mask-per-key", append(qkv(8, []int{1, 2, 3, 4}, []int{1, 2, 5, 4}, []int{1, 2, 5, 4}),
			Input{T: Rand(11, -1, 1, 5)}), nil),
		// Columns 4 and 5 lie past the mask: masked. Row 1 is false everywhere: zero weights.
		at("4d-short-bool-mask", append(qkv(12, []int{2, 2, 3, 4}, []int{2, 2, 6, 4}, []int{2, 2, 6, 5}),
			Input{T: bools([]int{3, 4}, func(i int) bool { return i/4 != 1 && i%3 != 2 })}), nil),
		at("3d-gqa-causal", qkv(16, []int{2, 5, 4 * 6}, []int{2, 5, 2 * 6}, []int{2, 5, 2 * 3}),
			attrs{"q_num_heads": AInt(4), "kv_num_heads": AInt(2), "is_causal": AInt(1)}),
		at("softcap", qkv(20, []int{1, 2, 4, 8}, []int{1, 2, 4, 8}, []int{1, 2, 4, 8}),
			attrs{"softcap": AFloat(0.5), "scale": AFloat(2)}),
		at("long-rows", append(qkv(24, []int{1, 1, 3, 4}, []int{1, 1, 300, 4}, []int{1, 1, 300, 2}),
			Input{T: Rand(27, -1, 1, 1, 1, 3, 300)}), nil),
	)
}

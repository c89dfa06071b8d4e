package passes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference/cpu"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/graph/passes"
	"github.com/beamml/beamml/inference/onnx"
	"github.com/beamml/beamml/internal/check"
)

// The tiny PyTorch exports in testdata (written by testdata/export.py)
// compiled by the CPU backend with its passes and without them: the
// passes fire, and the outputs match each other and PyTorch's.
//
// With and without the passes the outputs agree within the package's
// tolerance (rtol 1e-4, atol 1e-5): the passes change only rounding. Against
// PyTorch, whose kernels sum in other orders, the tolerance is the ONNX
// backend tests' (rtol 1e-3, atol 1e-4).
func TestExportedModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // op types (and fused epilogues, see opCounts) after the passes, with counts
		gone string // op types that must be gone
	}{
		// The Hardswish after the residual block's ReLU stays: the ReLU took
		// the Conv's activation. Before opset 14 it is exported as
		// x·HardSigmoid(x), which RecognizeHardSwish makes one again.
		{"resblock_opset13", "Conv:3 Conv+clamp:2 Conv+Sigmoid·:1 Conv+residual:1 Gemm:1 HardSwish:1",
			"BatchNormalization Relu Clip Sigmoid Add HardSigmoid Mul"},
		{"resblock_opset17", "Conv:3 Conv+clamp:2 Conv+Sigmoid·:1 Conv+residual:1 Gemm:1 HardSwish:1",
			"BatchNormalization Relu Clip Sigmoid Add"},
		{"encoder_opset14", "LayerNormalization:2 Attention:1 MatMul:6 MatMul+bias:6 MatMul+residual:2 MatMul+Gelu:1", "ReduceMean Erf Pow Sqrt Gelu Softmax"},
		{"encoder_opset17", "LayerNormalization:2 Attention:1 MatMul:6 MatMul+bias:6 MatMul+residual:2 MatMul+Gelu:1", "ReduceMean Erf Gelu Softmax"},
		{"gpt_opset14", "LayerNormalization:2 Attention:1 MatMul:4 MatMul+bias:4 MatMul+residual:2 MatMul+Gelu:1", "ReduceMean Tanh Pow Sqrt Gelu Softmax"},
		{"gpt_torchgelu_opset17", "LayerNormalization:2 Attention:1 MatMul:4 MatMul+bias:4 MatMul+residual:2 MatMul+Gelu:1", "Tanh Gelu Softmax"},
		// Hugging Face's GPT-2 attention: Where(causal, scores, lowest).
		{"hf_causal_opset14", "Attention:1", "Softmax"},
		// … and with GPT2Model's padding mask added after it: the two
		// masks added up (the Add) into Attention's one.
		{"hf_causal_padded_opset17", "Attention:1 Add:1", "Softmax"},
		// torch.nn.TransformerEncoderLayer: the 3-D attention of
		// MultiheadAttention, post-norm with a boolean key-padding mask
		// (Where(…, −inf, 0) reshaped to [batch·heads, 1, keys]), and
		// pre-norm, sequence first, without one.
		{"tenc_post_opset17", "LayerNormalization:2 Attention:1", "Softmax"},
		{"tenc_pre_opset14", "LayerNormalization:2 Attention:1", "Softmax ReduceMean"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", tc.name)
			on, before := compileExport(t, dir, cpu.Backend{})
			off, _ := compileExport(t, dir, cpu.Backend{Unoptimized: true})
			counts := opCounts(on.Graph())
			for _, kv := range strings.Fields(tc.want) {
				op, n, _ := strings.Cut(kv, ":")
				if got := fmt.Sprint(counts[op]); got != n {
					t.Errorf("%s %s after the passes, want %s", got, op, n)
				}
			}
			for _, op := range strings.Fields(tc.gone) {
				if counts[op] > 0 {
					t.Errorf("%d %s left after the passes", counts[op], op)
				}
			}
			t.Logf("%d nodes as exported, %d after constant folding alone, %d after the passes: %s",
				before, len(off.Graph().Nodes), len(on.Graph().Nodes), ops(on.Graph()))

			feeds, want := check.ExportData(t, dir, on.Graph())
			gotOn, err := on.Run(context.Background(), feeds)
			if err != nil {
				t.Fatal(err)
			}
			gotOff, err := off.Run(context.Background(), feeds)
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if msg := compare(gotOn[name], gotOff[name], rtol, atol); msg != "" {
					t.Errorf("output %q, with the passes against without: %s", name, msg)
				}
				if msg := compare(gotOn[name], w, 1e-3, 1e-4); msg != "" {
					t.Errorf("output %q, with the passes against PyTorch: %s", name, msg)
				}
				if msg := compare(gotOff[name], w, 1e-3, 1e-4); msg != "" {
					t.Errorf("output %q, without the passes against PyTorch: %s", name, msg)
				}
			}
		})
	}
}

// compileExport decodes dir/model.onnx and compiles it with backend; it
// returns the model and the number of nodes the file holds.
func compileExport(t *testing.T, dir string, backend cpu.Backend) (*cpu.Model, int) {
	t.Helper()
	g := check.DecodeExport(t, dir)
	nodes := len(g.Nodes)
	m, err := backend.Compile(g)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*cpu.Model), nodes
}

// opCounts counts the nodes of g by operator, and the fused epilogues
// by operator and part: "Conv+clamp", "MatMul+bias", "MatMul+residual",
// "MatMul+Gelu" (the activation), "Conv+Sigmoid·" (a gating one).
func opCounts(g *graph.Graph) map[string]int {
	c := map[string]int{}
	for _, n := range g.Nodes {
		c[n.OpType]++
		for attr, part := range map[string]string{passes.FusedMin: "clamp", passes.FusedBias: "bias", passes.FusedResidual: "residual"} {
			if n.Has(attr) {
				c[n.OpType+"+"+part]++
			}
		}
		if act := n.Str(passes.FusedActivation, ""); act != "" {
			if n.Int(passes.FusedGate, 0) != 0 {
				act += "·"
			}
			c[n.OpType+"+"+act]++
		}
	}
	return c
}

// BenchmarkExportedModels times the exports on the CPU backend with and
// without the optimising passes.
func BenchmarkExportedModels(b *testing.B) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "model.onnx"))
	if err != nil {
		b.Fatal(err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		for _, backend := range []cpu.Backend{{}, {Unoptimized: true}} {
			b.Run(fmt.Sprintf("%s/unoptimized=%v", filepath.Base(dir), backend.Unoptimized), func(b *testing.B) {
				data, err := os.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				g, err := onnx.Decode(data, dir)
				if err != nil {
					b.Fatal(err)
				}
				m, err := backend.Compile(g)
				if err != nil {
					b.Fatal(err)
				}
				feeds, _ := check.ExportData(b, dir, m.(*cpu.Model).Graph())
				for b.Loop() {
					if _, err := m.Run(context.Background(), feeds); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/beamml/beamml/inference"
)

// manifest is models.json, written by scripts/export_bench_models.py (the
// neural models) and scripts/export_bench_tabular.py (the tree ensembles):
// the benchmark's models in table order, and how to fill their inputs.
type manifest struct {
	Models []modelSpec `json:"models"`
}

// modelSpec is one model: its file, relative to the manifest's folder, and
// its inputs. Rows > 0 makes it a tabular model, timed at that many rows
// a run (its batch size) whatever --batches says, and reported in a table
// of its own.
type modelSpec struct {
	Name   string      `json:"name"`
	File   string      `json:"file"`
	Rows   int         `json:"rows"`
	Inputs []inputSpec `json:"inputs"`
}

// batches is the batch sizes the model is timed at: its Rows for a
// tabular model, else the given ones.
func (m modelSpec) batches(given []int) []int {
	if m.Rows > 0 {
		return []int{m.Rows}
	}
	return given
}

// inputSpec is one model input. Shape has batchAxis (-1) where the batch
// size goes. Fill names how element i of the batched tensor (row-major) is
// set; scripts/bench_fill.js applies the same rules, to the same bits
// (TestFillsMatchNode):
//
//	sin      float32: float32(sin(i)·0.5 + 0.5), rounded once from float64
//	uniform  float32: float32(Low + (High − Low)·u), in float64 and rounded
//	         once, where u = fmix32(i mod 2³²)/2³² and fmix32 is
//	         MurmurHash3's 32-bit finalizer: values spread evenly from
//	         Low to High, with no pattern along a row or down a column
//	ids      int64: (i·7919 + 13) mod Vocab
//	mask     int64: 0 where i mod n ≥ n − ⌊n/4⌋, else 1 (n: the last
//	         dimension), so the last quarter of every sequence is padding
type inputSpec struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int   `json:"shape"`
	Fill  string  `json:"fill"`
	Vocab int     `json:"vocab"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
}

// batchAxis marks the batch dimension in inputSpec.Shape.
const batchAxis = -1

// readManifest reads and checks the manifest at path.
func readManifest(path string) (manifest, error) {
	var m manifest
	data, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("manifest %s: %v", path, err)
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("manifest %s: %v", path, err)
	}
	return m, nil
}

// check reports the first model that is unnamed, named twice, has no file
// or inputs, has negative Rows, or has an input whose spec is invalid
// (inputSpec.check).
func (m manifest) check() error {
	if len(m.Models) == 0 {
		return fmt.Errorf("no models")
	}
	seen := map[string]bool{}
	for _, model := range m.Models {
		switch {
		case model.Name == "":
			return fmt.Errorf("a model has no name")
		case seen[model.Name]:
			return fmt.Errorf("model %q is listed twice", model.Name)
		case model.File == "":
			return fmt.Errorf("model %q has no file", model.Name)
		case len(model.Inputs) == 0:
			return fmt.Errorf("model %q has no inputs", model.Name)
		case model.Rows < 0:
			return fmt.Errorf("model %q has %d rows, want > 0 (tabular) or none", model.Name, model.Rows)
		}
		seen[model.Name] = true
		for _, in := range model.Inputs {
			if err := in.check(); err != nil {
				return fmt.Errorf("model %q: input %q: %v", model.Name, in.Name, err)
			}
		}
	}
	return nil
}

// check reports a spec that is unnamed, whose shape does not have exactly
// one batch axis and positive other dimensions, or whose fill does not
// suit its dtype ("sin", "uniform" with finite Low < High: float32; "ids"
// with a positive Vocab, "mask": int64).
func (in inputSpec) check() error {
	if in.Name == "" {
		return fmt.Errorf("no name")
	}
	if n := count(in.Shape, batchAxis); n != 1 {
		return fmt.Errorf("shape %v has %d batch axes (%d), want 1", in.Shape, n, batchAxis)
	}
	for _, d := range in.Shape {
		if d != batchAxis && d <= 0 {
			return fmt.Errorf("shape %v has dimension %d", in.Shape, d)
		}
	}
	switch {
	case in.DType == "float32" && in.Fill == "sin":
	case in.DType == "float32" && in.Fill == "uniform" && in.Low < in.High && !math.IsInf(in.High-in.Low, 0):
	case in.DType == "float32" && in.Fill == "uniform":
		return fmt.Errorf("fill \"uniform\" over [%v, %v], want finite low < high", in.Low, in.High)
	case in.DType == "int64" && in.Fill == "ids" && in.Vocab > 0:
	case in.DType == "int64" && in.Fill == "ids":
		return fmt.Errorf("fill \"ids\" with vocab %d, want > 0", in.Vocab)
	case in.DType == "int64" && in.Fill == "mask":
	default:
		return fmt.Errorf("dtype %q with fill %q: want float32 with sin or uniform, or int64 with ids or mask", in.DType, in.Fill)
	}
	return nil
}

func count(s []int, v int) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// tensor returns the input at batch size batch, filled by in.Fill.
func (in inputSpec) tensor(batch int) (inference.Tensor, error) {
	shape := slices.Clone(in.Shape)
	shape[slices.Index(shape, batchAxis)] = batch
	n, err := inference.NumElements(shape)
	if err != nil {
		return inference.Tensor{}, fmt.Errorf("input %q: %v", in.Name, err)
	}
	switch in.Fill {
	case "sin":
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(math.Sin(float64(i))*0.5 + 0.5)
		}
		return inference.New(shape, data)
	case "uniform":
		data := make([]float32, n)
		for i := range data {
			u := float64(fmix32(uint32(i))) / (1 << 32)
			// The conversion keeps the product from being fused into a
			// multiply-add, which JavaScript does not do either.
			data[i] = float32(in.Low + float64((in.High-in.Low)*u))
		}
		return inference.New(shape, data)
	case "ids":
		data := make([]int64, n)
		for i := range data {
			data[i] = (int64(i)*7919 + 13) % int64(in.Vocab)
		}
		return inference.New(shape, data)
	case "mask":
		data := make([]int64, n)
		last := shape[len(shape)-1]
		for i := range data {
			if i%last < last-last/4 {
				data[i] = 1
			}
		}
		return inference.New(shape, data)
	}
	return inference.Tensor{}, fmt.Errorf("input %q: unknown fill %q", in.Name, in.Fill)
}

// feeds returns the model's inputs at batch size batch.
func (m modelSpec) feeds(batch int) (map[string]inference.Tensor, error) {
	feeds := make(map[string]inference.Tensor, len(m.Inputs))
	for _, in := range m.Inputs {
		t, err := in.tensor(batch)
		if err != nil {
			return nil, fmt.Errorf("model %q: %v", m.Name, err)
		}
		feeds[in.Name] = t
	}
	return feeds, nil
}

// fmix32 is MurmurHash3's 32-bit finalizer: every bit of h affects every
// bit of the result.
func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

package opsem

import (
	"fmt"
	"strings"

	"github.com/beamml/beamml/inference"
)

// RecurrentOptions are the attributes of an RNN, GRU or LSTM node (opsets
// 1 to 22) that say how its cell runs.
type RecurrentOptions struct {
	// Dirs is 2 for direction "bidirectional", else 1; Reverse is true for
	// "reverse": the only direction runs from the last step to the first
	// (the second of a bidirectional node always does).
	Dirs    int
	Reverse bool
	// Layout 1 puts the batch first in X, initial_h, initial_c and every
	// output; 0 puts the sequence (or the direction) first.
	Layout int64
	// Activations holds each direction's functions: RNN f; GRU f, g;
	// LSTM f, g, h.
	Activations [][]RecurrentActivation
	// Clip > 0 bounds every gate's pre-activation to [-Clip, Clip] (not
	// the LSTM's h(C)).
	Clip                           float64
	LinearBeforeReset, InputForget bool
}

// RecurrentActivation is one activation function of a recurrent cell: its
// name in lower case ("tanh", "hardsigmoid", …) and the alpha and beta it
// takes (0 for a function that takes none).
type RecurrentActivation struct {
	Name        string
	Alpha, Beta float64
}

// recurrentParams are the activations a recurrent cell takes, with how
// many of activation_alpha and activation_beta each consumes and the
// values it takes when the lists run out (onnxruntime's).
var recurrentParams = map[string]struct {
	alphas, betas int
	alpha, beta   float64
}{
	"tanh": {}, "sigmoid": {}, "relu": {}, "softsign": {}, "softplus": {},
	"affine":          {1, 1, 0, 0},
	"leakyrelu":       {1, 0, 0.01, 0},
	"thresholdedrelu": {1, 0, 0, 0},
	"scaledtanh":      {1, 1, 0, 0},
	"hardsigmoid":     {1, 1, 0.2, 0.5},
	"elu":             {1, 0, 1, 0},
}

// RecurrentDefaults are the default activations of one direction of each
// recurrent operator: RNN f; GRU f, g; LSTM f, g, h.
var RecurrentDefaults = map[string][]string{
	"RNN":  {"Tanh"},
	"GRU":  {"Sigmoid", "Tanh"},
	"LSTM": {"Sigmoid", "Tanh", "Tanh"},
}

// Recurrent reads the options of n, an RNN, GRU or LSTM node, whose cell
// has RecurrentDefaults' activations unless its activations attribute
// names others (case-insensitive) for every direction, or once for both;
// each consumes the next activation_alpha and activation_beta values it
// takes.
func Recurrent(n Node) (RecurrentOptions, error) {
	defaults, ok := RecurrentDefaults[n.OpType]
	if !ok {
		return RecurrentOptions{}, fmt.Errorf("%v is not a recurrent operator: %w", n.Node, inference.ErrBadModel)
	}
	o := RecurrentOptions{Dirs: 1, Layout: n.Int("layout", 0), Clip: float64(n.Float("clip", 0)),
		LinearBeforeReset: n.Int("linear_before_reset", 0) != 0, InputForget: n.Int("input_forget", 0) != 0}
	switch d := n.Str("direction", "forward"); d {
	case "forward":
	case "reverse":
		o.Reverse = true
	case "bidirectional":
		o.Dirs = 2
	default:
		return o, fmt.Errorf("direction %q, want forward, reverse or bidirectional: %w", d, inference.ErrBadModel)
	}
	if o.Layout != 0 && o.Layout != 1 {
		return o, n.Unsupported("layout %d", o.Layout)
	}
	per := len(defaults)
	names := defaults
	if a, ok := n.Attrs["activations"]; ok && len(a.Strings) > 0 {
		names = a.Strings
	}
	if len(names) == per && o.Dirs == 2 {
		names = append(names[:per:per], names...)
	}
	if len(names) != per*o.Dirs {
		return o, fmt.Errorf("activations %v, want %d names: %w", names, per*o.Dirs, inference.ErrBadModel)
	}
	alphas, betas := n.Floats("activation_alpha", nil), n.Floats("activation_beta", nil)
	next := func(list *[]float32, def float64) float64 {
		if len(*list) == 0 {
			return def
		}
		v := (*list)[0]
		*list = (*list)[1:]
		return float64(v)
	}
	o.Activations = make([][]RecurrentActivation, o.Dirs)
	for i, name := range names {
		a := RecurrentActivation{Name: strings.ToLower(name)}
		p, ok := recurrentParams[a.Name]
		if !ok {
			return o, n.Unsupported("activation %q", name)
		}
		if p.alphas > 0 {
			a.Alpha = next(&alphas, p.alpha)
		}
		if p.betas > 0 {
			a.Beta = next(&betas, p.beta)
		}
		o.Activations[i/per] = append(o.Activations[i/per], a)
	}
	return o, nil
}

// Default reports whether every direction has the defaults activations.
func (o RecurrentOptions) Default(defaults []string) bool {
	for _, acts := range o.Activations {
		for i, a := range acts {
			if !strings.EqualFold(a.Name, defaults[i]) {
				return false
			}
		}
	}
	return true
}

package cpu

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

func init() {
	register("NegativeLogLikelihoodLoss", lsNLLLoss)
	register("SoftmaxCrossEntropyLoss", lsSoftmaxCrossEntropyLoss)
}

// lsLoss is what the two loss operators share: the input's layout
// [N, C, d1, …, dk], the class of each of the N·d1·…·dk positions, and the
// attributes.
type lsLoss struct {
	shape       []int   // of the scores, [N, C, d1, …, dk]
	targetShape []int   // [N, d1, …, dk]
	target      []int64 // class per position
	weight      []float32
	reduction   string
	ignore      int64
	hasIgnore   bool
}

// lsLossInputs reads the attributes and the inputs (scores, target, optional
// weight) of a loss operator and checks their shapes: the target is the
// scores' shape without dimension 1 (the C classes), the weight has C values.
func lsLossInputs(n opsem.Node, in []inference.Tensor) (*lsLoss, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("%d inputs, want 2 or 3 (scores, target, weight): %w", len(in), inference.ErrBadModel)
	}
	l := &lsLoss{reduction: n.Str("reduction", "mean")}
	switch l.reduction {
	case "none", "sum", "mean":
	default:
		return nil, n.Unsupported("reduction %q", l.reduction)
	}
	l.ignore, l.hasIgnore = n.Int("ignore_index", 0), n.Has("ignore_index")
	x, target := in[0], in[1]
	if x.DType() != inference.Float32 {
		return nil, n.Unsupported("scores of element type %v", x.DType())
	}
	if t := target.DType(); t != inference.Int64 && t != inference.Int32 {
		return nil, fmt.Errorf("target %v, want int64 or int32: %w", target, inference.ErrType)
	}
	l.shape = x.Shape()
	if len(l.shape) < 2 {
		return nil, fmt.Errorf("scores %v, want rank 2 or more (N, C, …): %w", x, inference.ErrShape)
	}
	l.targetShape = target.Shape()
	want := append([]int{l.shape[0]}, l.shape[2:]...)
	if !slices.Equal(l.targetShape, want) {
		return nil, fmt.Errorf("target %v for scores %v, want shape %v: %w", target, x, want, inference.ErrShape)
	}
	var err error
	if l.target, err = int64sUnder(n.Run, target); err != nil {
		return nil, err
	}
	if w := arg(in, 2); present(w) {
		if w.DType() != inference.Float32 {
			return nil, n.Unsupported("weight of element type %v", w.DType())
		}
		if w.Rank() != 1 || w.Len() != l.shape[1] {
			return nil, fmt.Errorf("weight %v, want [%d] (one per class): %w", w, l.shape[1], inference.ErrShape)
		}
		l.weight, _ = floats(w)
	}
	return l, nil
}

// compute returns the loss for log-probabilities logp laid out as l.shape:
// at each position, loss = -weight[c]·logp[n, c, d…] with c the target class,
// and 0 where the target is ignore_index. "sum" adds the losses, "mean"
// divides that sum by the sum of the weights applied (the count of the
// positions not ignored when there is no weight input). Only "none", which
// returns the loss of every position, allocates them, under r.
func (l *lsLoss) compute(r *limit.Run, logp []float32) (inference.Tensor, error) {
	classes, spatial := l.shape[1], 0
	if len(l.target) > 0 { // else d1…dk may not count within int
		spatial = len(l.target) / l.shape[0]
	}
	var loss []float32 // as large as the target input
	if l.reduction == "none" {
		var err error
		if loss, err = limit.Make[float32](r, len(l.target)); err != nil {
			return inference.Tensor{}, err
		}
	}
	var sum, weights float64
	for i, c := range l.target {
		if l.hasIgnore && c == l.ignore {
			continue
		}
		if c < 0 || c >= int64(classes) {
			return inference.Tensor{}, fmt.Errorf("target %d at position %d is not a class in [0, %d): %w", c, i, classes, inference.ErrShape)
		}
		w := float32(1)
		if l.weight != nil {
			w = l.weight[c]
		}
		s, d := i/spatial, i%spatial
		v := -w * logp[(s*classes+int(c))*spatial+d]
		if loss != nil {
			loss[i] = v
		}
		sum += float64(v)
		weights += float64(w)
	}
	switch l.reduction {
	case "none":
		return inference.New(l.targetShape, loss)
	case "sum":
		return inference.New([]int{}, []float32{float32(sum)})
	}
	return inference.New([]int{}, []float32{float32(sum / weights)})
}

// lsNLLLoss is NegativeLogLikelihoodLoss: input holds log-probabilities.
func lsNLLLoss(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	l, err := lsLossInputs(n, in)
	if err != nil {
		return nil, err
	}
	x, _ := floats(in[0])
	loss, err := l.compute(n.Run, x)
	if err != nil {
		return nil, err
	}
	return []inference.Tensor{loss}, nil
}

// lsSoftmaxCrossEntropyLoss is SoftmaxCrossEntropyLoss: the negative
// log-likelihood loss of log_prob = LogSoftmax(scores) over dimension 1,
// which is the optional second output.
func lsSoftmaxCrossEntropyLoss(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	l, err := lsLossInputs(n, in)
	if err != nil {
		return nil, err
	}
	x, _ := floats(in[0])
	// Without scores the loops would count the dimensions that are not 0
	// (and d1…dk may not count within int).
	batch, classes, spatial := 0, l.shape[1], 0
	if len(x) > 0 {
		batch, spatial = l.shape[0], len(x)/(l.shape[0]*classes)
	}
	logp, err := limit.Make[float32](n.Run, len(x))
	if err != nil {
		return nil, err
	}
	for s := range batch {
		for d := range spatial {
			base := s*classes*spatial + d
			m := math.Inf(-1)
			for c := range classes {
				m = max(m, float64(x[base+c*spatial]))
			}
			var sum float64
			for c := range classes {
				sum += math.Exp(float64(x[base+c*spatial]) - m)
			}
			shift := m + math.Log(sum)
			for c := range classes {
				logp[base+c*spatial] = float32(float64(x[base+c*spatial]) - shift)
			}
		}
	}
	loss, err := l.compute(n.Run, logp)
	if err != nil {
		return nil, err
	}
	out := []inference.Tensor{loss}
	if wantsOutput(n, 1) {
		lp, err := inference.New(l.shape, logp)
		if err != nil {
			return nil, err
		}
		out = append(out, lp)
	}
	return out, nil
}

package opsem

import (
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
)

// Epsilon is the epsilon of the normalisations (BatchNormalization,
// InstanceNormalization, LayerNormalization, GroupNormalization,
// RMSNormalization): the attribute, default 1e-5.
func Epsilon(n Node) float64 { return float64(n.Float("epsilon", 1e-5)) }

// Channels views an input of shape shape as [batch, channels, spatial…]:
// rank 2 or more, and spatial dimensions that count within int (beside a
// 0 batch or channel dimension they need not).
func Channels(shape []int) (batch, channels, spatial int, err error) {
	if len(shape) < 2 {
		return 0, 0, 0, fmt.Errorf("input %v, want rank 2 or more (N, C, …): %w", shape, inference.ErrShape)
	}
	if spatial, err = inference.NumElements(shape[2:]); err != nil {
		return 0, 0, 0, fmt.Errorf("input %v: spatial dimensions: %w", shape, err)
	}
	return shape[0], shape[1], spatial, nil
}

// BatchNorm returns how BatchNormalization applies its statistics to an
// input of shape shape: params statistics (one per channel, or with
// spatial=0 before opset 9 one per element of a sample), each repeated over
// repeat consecutive elements; and whether it trains (training_mode, from
// opset 14).
func BatchNorm(n Node, shape []int) (params, repeat int, training bool, err error) {
	_, channels, spatial, err := Channels(shape)
	if err != nil {
		return 0, 0, false, err
	}
	params, repeat = channels, spatial
	if n.Opset < 9 && n.Int("spatial", 1) == 0 {
		params, repeat = channels*spatial, 1
	}
	return params, repeat, n.Opset >= 14 && n.Int("training_mode", 0) != 0, nil
}

// GroupNorm returns GroupNormalization's group count for an input of shape
// shape (attribute num_groups, which must divide the channels) and the
// number of scale and bias values: one per group before opset 21, one per
// channel from it.
func GroupNorm(n Node, shape []int) (groups, params int, err error) {
	_, channels, _, err := Channels(shape)
	if err != nil {
		return 0, 0, err
	}
	if !n.Has("num_groups") {
		return 0, 0, fmt.Errorf("attribute num_groups missing: %w", inference.ErrBadModel)
	}
	groups = int(n.Int("num_groups", 0))
	if groups <= 0 || channels%groups != 0 {
		return 0, 0, fmt.Errorf("num_groups %d does not divide the %d channels of input %v: %w", groups, channels, shape, inference.ErrShape)
	}
	if n.Opset < 21 {
		return groups, groups, nil
	}
	return groups, channels, nil
}

// BlockNormAxis is the first normalised axis of LayerNormalization and
// RMSNormalization for an input of shape shape (attribute axis, default
// −1): each block over the axes from it to the last is normalised on its
// own.
func BlockNormAxis(n Node, shape []int) (int, error) {
	axis, err := NormAxis(n.Int("axis", -1), len(shape))
	if err != nil {
		return 0, fmt.Errorf("input %v: %w", shape, err)
	}
	return axis, nil
}

// BlockOperand returns the shape with which a scale or bias of shape s
// (name names it in errors) applies to each normalised block of shape
// block: s without leading 1s beyond the block's rank, which must
// broadcast to the block.
func BlockOperand(s, block []int, name string) ([]int, error) {
	t := s
	for len(t) > len(block) && t[0] == 1 {
		t = t[1:]
	}
	if b, err := BroadcastShape(block, t); err != nil || !slices.Equal(b, block) {
		return nil, fmt.Errorf("%s %v does not broadcast to the normalised shape %v: %w", name, s, block, inference.ErrShape)
	}
	return t, nil
}

// LRN returns LRN's attributes: the window of size channels (required,
// positive), reaching (size−1)/2 channels back and size/2 forward, and
// alpha (default 1e-4), beta (0.75) and bias (1):
// y = x / (bias + alpha/size · Σ x²)^beta.
func LRN(n Node) (size int, alpha, beta, bias float64, err error) {
	s := n.Int("size", 0)
	if s <= 0 {
		return 0, 0, 0, 0, fmt.Errorf("attribute size is %d, want a positive window: %w", s, inference.ErrBadModel)
	}
	return int(s), float64(n.Float("alpha", 1e-4)), float64(n.Float("beta", 0.75)), float64(n.Float("bias", 1)), nil
}

// LpNorm returns LpNormalization's order p (attribute, default 2; 1 and 2
// are implemented) and axis (default −1) for an input of shape shape.
func LpNorm(n Node, shape []int) (p, axis int, err error) {
	pp := n.Int("p", 2)
	if pp != 1 && pp != 2 {
		return 0, 0, n.Unsupported("p=%d", pp)
	}
	axis, err = NormAxis(n.Int("axis", -1), len(shape))
	if err != nil {
		return 0, 0, fmt.Errorf("input %v: %w", shape, err)
	}
	return int(pp), axis, nil
}

// LayerNormStats checks what LayerNormalization's optional Mean and
// InvStdDev outputs need, when the node asks for them (stats): stash_type
// 1 (float32, the default), the precision the runtime computes them in.
func LayerNormStats(n Node, stats bool) error {
	if stash := n.Int("stash_type", 1); stats && stash != 1 {
		return n.Unsupported("stash_type %d for the Mean and InvStdDev outputs", stash)
	}
	return nil
}

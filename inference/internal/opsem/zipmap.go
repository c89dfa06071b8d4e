package opsem

import (
	"fmt"
	"strconv"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
)

// ZipMapLabels returns the class labels of a ZipMap node, integers in
// decimal: its classlabels_strings or classlabels_int64s, exactly one of
// which it must have, without repeats.
func ZipMapLabels(n *graph.Node) ([]string, error) {
	s, hasStrings := n.Attrs["classlabels_strings"]
	ints, hasInts := n.Attrs["classlabels_int64s"]
	if hasStrings == hasInts {
		return nil, fmt.Errorf("node %v: want one of classlabels_strings and classlabels_int64s: %w", n, inference.ErrBadModel)
	}
	labels := s.Strings
	if hasInts {
		labels = make([]string, len(ints.Ints))
		for i, v := range ints.Ints {
			labels[i] = strconv.FormatInt(v, 10)
		}
	}
	seen := make(map[string]bool, len(labels))
	for _, l := range labels {
		if seen[l] {
			return nil, fmt.Errorf("node %v: class label %q appears twice: %w", n, l, inference.ErrBadModel)
		}
		seen[l] = true
	}
	return labels, nil
}

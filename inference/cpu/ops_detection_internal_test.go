package cpu

import (
	"context"
	"errors"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/graph"
	"github.com/beamml/beamml/inference/internal/limit"
)

func TestNonMaxSuppression(t *testing.T) {
	// Box 1 overlaps box 0 with IoU 0.9/1.1; box 2 is apart; box 3 has box
	// 2's score and lies apart from all, so it follows box 2 (lower index
	// first).
	boxes := tensorOf(t, []int{1, 4, 4}, float32(0), 0, 1, 1, 0, 0.1, 1, 1.1, 0, 10, 1, 11, 5, 5, 6, 6)
	scores := tensorOf(t, []int{1, 1, 4}, float32(0.9), 0.8, 0.7, 0.7)
	limit := tensorOf(t, []int{1}, int64(10))
	iou := tensorOf(t, []int{1}, float32(0.5))
	n := testNode("NonMaxSuppression", 24, nil, 1)
	got := runKernel(t, n, boxes, scores, limit, iou)[0]
	checkExact[int64](t, got, []int{3, 3}, 0, 0, 0, 0, 0, 2, 0, 0, 3)

	got = runKernel(t, n, boxes, scores, limit, tensorOf(t, []int{1}, float32(0.85)))[0]
	checkExact[int64](t, got, []int{4, 3}, 0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3)

	// A score must exceed score_threshold; at most 1 box per class.
	got = runKernel(t, n, boxes, scores, tensorOf(t, []int{1}, int64(1)), iou, tensorOf(t, []int{1}, float32(0.7)))[0]
	checkExact[int64](t, got, []int{1, 3}, 0, 0, 0)
	got = runKernel(t, n, boxes, scores, tensorOf(t, []int{1}, int64(10)), iou, tensorOf(t, []int{1}, float32(0.7)))[0]
	checkExact[int64](t, got, []int{1, 3}, 0, 0, 0)

	// Without max_output_boxes_per_class nothing is selected.
	got = runKernel(t, n, boxes, scores)[0]
	checkExact[int64](t, got, []int{0, 3})

	// The same boxes as centre, width, height.
	centered := tensorOf(t, []int{1, 4, 4}, float32(0.5), 0.5, 1, 1, 0.6, 0.5, 1, 1, 10.5, 0.5, 1, 1, 5.5, 5.5, 1, 1)
	got = runKernel(t, testNode("NonMaxSuppression", 24, map[string]graph.Attr{"center_point_box": attrInt(1)}, 1), centered, scores, limit, iou)[0]
	checkExact[int64](t, got, []int{3, 3}, 0, 0, 0, 0, 0, 2, 0, 0, 3)

	if _, err := dtNonMaxSuppression(n, []inference.Tensor{boxes, tensorOf(t, []int{1, 1, 3}, float32(1), 1, 1)}); !errors.Is(err, inference.ErrShape) {
		t.Errorf("3 scores for 4 boxes: err %v, want ErrShape", err)
	}
}

// TestNonMaxSuppressionStopsWhenCancelled: the selection loop is not bounded
// by the output's size, so it polls the run and stops once it is cancelled.
func TestNonMaxSuppressionStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	boxes := tensorOf(t, []int{1, 2, 4}, float32(0), 0, 1, 1, 5, 5, 6, 6)
	scores := tensorOf(t, []int{1, 1, 2}, float32(0.9), 0.8)
	maxOut := tensorOf(t, []int{1}, int64(10))
	n := testNode("NonMaxSuppression", 24, nil, 1)
	_, err := RunNode(limit.New(ctx, 0), n.Node, 24, []inference.Tensor{boxes, scores, maxOut})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: err %v, want context.Canceled", err)
	}
	if _, err := RunNode(limit.New(context.Background(), 0), n.Node, 24, []inference.Tensor{boxes, scores, maxOut}); err != nil {
		t.Fatalf("live run: %v", err)
	}
}

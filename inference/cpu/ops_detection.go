package cpu

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/limit"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// Object detection: NonMaxSuppression.

func init() {
	register("NonMaxSuppression", dtNonMaxSuppression)
}

// dtScalarInput returns the single value of an optional scalar input, and
// false when the input is left out or empty.
func dtScalarInput[T float32 | int64](t inference.Tensor, name string) (T, bool, error) {
	if !present(t) || t.Len() == 0 {
		return 0, false, nil
	}
	if t.Len() != 1 {
		return 0, false, fmt.Errorf("%s %v, want one value: %w", name, t, inference.ErrShape)
	}
	d, err := inference.Data[T](t)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", name, err)
	}
	return d[0], true, nil
}

// dtBox is a box as its corners, lo ≤ hi on each axis.
type dtBox struct{ x0, y0, x1, y1 float32 }

// dtCorners reads box i of boxes ([y1, x1, y2, x2], any diagonal pair, or
// with centerPoint [x_center, y_center, width, height]).
func dtCorners(boxes []float32, i int, centerPoint bool) dtBox {
	b := boxes[4*i : 4*i+4]
	if centerPoint {
		hw, hh := b[2]/2, b[3]/2
		return dtBox{b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh}
	}
	return dtBox{min(b[1], b[3]), min(b[0], b[2]), max(b[1], b[3]), max(b[0], b[2])}
}

// dtOverlaps reports whether the intersection over union of a and b exceeds
// threshold. Arithmetic is in float32, as in ONNX's reference, so that
// results at the threshold agree with it.
func dtOverlaps(a, b dtBox, threshold float32) bool {
	ix0, ix1 := max(a.x0, b.x0), min(a.x1, b.x1)
	iy0, iy1 := max(a.y0, b.y0), min(a.y1, b.y1)
	if ix1 <= ix0 || iy1 <= iy0 {
		return false
	}
	// The float32 conversions round each product, keeping the compiler
	// from fusing a multiply and an add.
	inter := float32((ix1 - ix0) * (iy1 - iy0))
	areaA := float32((a.x1 - a.x0) * (a.y1 - a.y0))
	areaB := float32((b.x1 - b.x0) * (b.y1 - b.y0))
	union := areaA + areaB - inter
	if inter <= 0 || areaA <= 0 || areaB <= 0 || union <= 0 {
		return false
	}
	return inter/union > threshold
}

// dtNonMaxSuppression is NonMaxSuppression: for each batch and class, the
// boxes are taken by decreasing score (lower index first among equal
// scores), skipping those with score ≤ score_threshold (when given) and
// those whose IoU with a box already taken exceeds iou_threshold, up to
// max_output_boxes_per_class (0 when left out). The result is
// [batch, class, box] rows in that order.
func dtNonMaxSuppression(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("%d inputs, want 2 to 5 (boxes, scores, …): %w", len(in), inference.ErrBadModel)
	}
	centerPoint := false
	switch c := n.Int("center_point_box", 0); c {
	case 0:
	case 1:
		centerPoint = true
	default:
		return nil, n.Unsupported("center_point_box=%d", c)
	}
	boxesT, scoresT := in[0], in[1]
	if boxesT.DType() != inference.Float32 || scoresT.DType() != inference.Float32 {
		return nil, n.Unsupported("boxes %v and scores %v, want float32", boxesT, scoresT)
	}
	bs, ss := boxesT.Shape(), scoresT.Shape()
	if len(bs) != 3 || bs[2] != 4 {
		return nil, fmt.Errorf("boxes %v, want [batches, boxes, 4]: %w", boxesT, inference.ErrShape)
	}
	if len(ss) != 3 || ss[0] != bs[0] || ss[2] != bs[1] {
		return nil, fmt.Errorf("scores %v for boxes %v, want [%d, classes, %d]: %w", scoresT, boxesT, bs[0], bs[1], inference.ErrShape)
	}
	maxPerClass, _, err := dtScalarInput[int64](arg(in, 2), "max_output_boxes_per_class")
	if err != nil {
		return nil, err
	}
	iouThreshold, _, err := dtScalarInput[float32](arg(in, 3), "iou_threshold")
	if err != nil {
		return nil, err
	}
	scoreThreshold, hasScoreThreshold, err := dtScalarInput[float32](arg(in, 4), "score_threshold")
	if err != nil {
		return nil, err
	}
	boxes, _ := floats(boxesT)
	scores, _ := floats(scoresT)
	batches, numBoxes, classes := bs[0], bs[1], ss[1]
	var selected []int64
	if batches == 0 || classes == 0 { // numBoxes may not count within int
		return opsem.Single(n, []int{0, 3}, selected)
	}
	// One class at a time: its candidates, and the boxes it keeps with
	// their indices.
	perClass := numBoxes
	if maxPerClass < int64(numBoxes) {
		perClass = int(max(0, maxPerClass))
	}
	if _, err := limit.Claim[int](n.Run, numBoxes); err != nil {
		return nil, err
	}
	if _, err := limit.Claim[dtBox](n.Run, perClass); err != nil {
		return nil, err
	}
	if _, err := limit.Claim[int](n.Run, perClass); err != nil {
		return nil, err
	}
	candidates, kept, picked := make([]int, 0, numBoxes), make([]dtBox, 0, perClass), make([]int, 0, perClass)
	for b := range batches {
		batchBoxes := boxes[b*numBoxes*4 : (b+1)*numBoxes*4]
		for c := range classes {
			classScores := scores[(b*classes+c)*numBoxes : (b*classes+c+1)*numBoxes]
			candidates = candidates[:0]
			for i, s := range classScores {
				if !hasScoreThreshold || s > scoreThreshold {
					candidates = append(candidates, i)
				}
			}
			slices.SortStableFunc(candidates, func(i, j int) int { return cmp.Compare(classScores[j], classScores[i]) })
			kept, picked = kept[:0], picked[:0]
			for _, i := range candidates {
				if len(kept) >= perClass {
					break
				}
				// The loop is quadratic in the boxes kept, not bounded by
				// the output's size: it stops when the run is cancelled.
				if err := n.Run.Err(); err != nil {
					return nil, err
				}
				box := dtCorners(batchBoxes, i, centerPoint)
				if !slices.ContainsFunc(kept, func(k dtBox) bool { return dtOverlaps(box, k, iouThreshold) }) {
					kept = append(kept, box)
					picked = append(picked, i)
				}
			}
			// The result grows as append would, claimed first.
			if need := len(selected) + 3*len(picked); need > cap(selected) {
				grown := max(need, 2*cap(selected))
				if _, err := limit.Claim[int64](n.Run, grown); err != nil {
					return nil, err
				}
				selected = slices.Grow(selected, grown-len(selected))
			}
			for _, i := range picked {
				selected = append(selected, int64(b), int64(c), int64(i))
			}
		}
	}
	return opsem.Single(n, []int{len(selected) / 3, 3}, selected)
}

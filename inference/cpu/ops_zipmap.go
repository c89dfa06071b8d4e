package cpu

import (
	"fmt"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
)

func init() {
	registerML("ZipMap", zmZipMap)
	registerAttrs(MLDomain+".ZipMap", func(n opsem.Node) ([]string, error) { return opsem.ZipMapLabels(n.Node) })
}

// zmZipMap is ZipMap as the runtime holds its maps (inference/onnx's
// zipmap.go): the [rows, classes] scores themselves, checked to have one
// column per class label; the labels are the graph output's.
func zmZipMap(n opsem.Node, in []inference.Tensor) ([]inference.Tensor, error) {
	if err := needInputs(in, 1); err != nil {
		return nil, err
	}
	labels, err := readAttrs(n, in, func(n opsem.Node) ([]string, error) { return opsem.ZipMapLabels(n.Node) })
	if err != nil {
		return nil, err
	}
	x := in[0]
	if x.DType() != inference.Float32 {
		return nil, fmt.Errorf("scores are %v, want float32: %w", x, inference.ErrType)
	}
	if x.Rank() != 2 && x.Rank() != 1 || x.Dim(x.Rank()-1) != len(labels) {
		return nil, fmt.Errorf("scores are %v, want [rows, %d], one per class label: %w", x, len(labels), inference.ErrShape)
	}
	return viewOutput(n, x, keptShape(n, in, 0))
}

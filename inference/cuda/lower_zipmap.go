package cuda

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/internal/opsem"
)

// The lowering of ZipMap, whose output the runtime holds as its input
// scores (inference/onnx's zipmap.go): a copy on the device.

func init() { registerLowering(mlDomain+".ZipMap", lowerZipMap) }

// lowerZipMap copies the [rows, classes] (or [classes]) float32 scores,
// one column per class label, to the output, as the CPU backend's view.
func lowerZipMap(l *lowering) error {
	x := l.input(0)
	labels, err := opsem.ZipMapLabels(l.Node.Node)
	if err != nil {
		return l.NoKernel("%v", err) // the host reports it
	}
	if x.DType != inference.Float32 || x.Rank() != 1 && x.Rank() != 2 || x.Shape[x.Rank()-1] != len(labels) {
		return l.NoKernel("scores are %v%v for %d labels", x.DType, x.Shape, len(labels))
	}
	if err := checkOut(l, 0, inference.Float32, x.Shape); err != nil {
		return err
	}
	if x.loc == l.Out[0].loc {
		return nil
	}
	return l.Copy(l.Out[0], x)
}

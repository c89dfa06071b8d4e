//go:build unix

package hostile_test

import (
	"errors"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/internal/onnxpb"
)

// TestFIFOExternalData: external data that names a FIFO in the model's
// folder, which no one writes, fails the load with inference.ErrBadModel;
// opening it for reading would wait for a writer forever.
func TestFIFOExternalData(t *testing.T) {
	isolate(t, "fifo", func(t *testing.T) {
		w := &onnxpb.TensorProto{Name: "w", Dims: dims(2), DataType: int32(f32), DataLocation: onnxpb.TensorProto_EXTERNAL,
			ExternalData: []*onnxpb.StringStringEntryProto{{Key: "location", Value: "w.bin"}, {Key: "length", Value: strconv.Itoa(8)}}}
		path := write(t, single(op("add", "Add", names("x", "w")), f32, vals(info("x", f32, 2)), w))
		if err := syscall.Mkfifo(filepath.Join(filepath.Dir(path), "w.bin"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := loadErr(t, path, std); !errors.Is(err, inference.ErrBadModel) {
			t.Fatalf("load: %v, want an error wrapping inference.ErrBadModel", err)
		}
	})
}

//go:build unix

package onnx_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/onnx"
)

// External data that is a FIFO is refused: opening one for reading waits
// for a writer, forever when none comes.
func TestExternalDataFIFOFails(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "w.bin"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := onnx.Decode(marshal(t, model(external("w.bin", 8))), dir)
	wantErr(t, err, inference.ErrBadModel, `initializer "w"`, `"w.bin"`, "not a regular file")
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed generated files are what the generator makes of the
// committed kernel sources: nobody keeps a code or a kernel name in step by
// hand. (make kernels regenerates them; CI also regenerates the PTX.)
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := generate("..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s is not committed (run make kernels): %v", path, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what kernelgen generates from the sources: run make kernels", path)
		}
	}
	stale, _ := filepath.Glob(filepath.Join("..", "emu", "*_gen.cc"))
	for _, f := range stale {
		if _, ok := files[f]; !ok {
			t.Errorf("%s has no kernel source: run make kernels", f)
		}
	}
}

func TestGoName(t *testing.T) {
	for kernel, want := range map[string]string{"unary_f32": "UnaryF32", "conv_im2col_f32": "ConvIm2colF32", "shape_copy": "ShapeCopy"} {
		if got := goName(kernel); got != want {
			t.Errorf("goName(%q) = %q, want %q", kernel, got, want)
		}
	}
}

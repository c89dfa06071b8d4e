//go:build cgo

package cuda_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/check"
	"github.com/beamml/beamml/internal/kernels"
)

// TestConvChunks runs the Conv and ConvTranspose cases with the im2col
// and col2im scratch bounded so that a batch runs in chunks of images:
// one image at a time (a bound below one image's columns), and chunks
// that do not divide the batch.
func TestConvChunks(t *testing.T) {
	for _, limit := range []int64{1, 500, 1000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			defer cuda.SetColLimit(limit)()
			for _, c := range check.Cases() {
				if !strings.HasPrefix(c.Name, "nn/Conv/") && !strings.HasPrefix(c.Name, "nn/ConvTranspose/") {
					continue
				}
				t.Run(c.Name, func(t *testing.T) {
					b, dev := newSim(t, 0)
					if err := check.Run(context.Background(), b, c); err != nil {
						t.Fatal(err)
					}
					if err := dev.Close(); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// TestConvIm2col64 runs the Conv cases with im2col in 64-bit index
// arithmetic (conv_im2col_f32), which the cases' small sizes would
// otherwise leave to the 32-bit kernel (conv_im2col32_f32): both give the
// CPU backend's results.
func TestConvIm2col64(t *testing.T) {
	defer cuda.SetIm2col32(false)()
	for _, c := range check.Cases() {
		if !strings.HasPrefix(c.Name, "nn/Conv/") {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			b, _ := newSim(t, 0)
			if err := check.Run(context.Background(), b, c); err != nil {
				t.Fatal(err)
			}
		})
	}
	if runner.Launched()[kernels.ConvIm2colF32] == 0 {
		t.Error("no case launched conv_im2col_f32")
	}
}

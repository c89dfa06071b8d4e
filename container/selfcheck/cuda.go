//go:build cuda

package main

import (
	"fmt"
	"strings"

	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	_ "github.com/beamml/beamml/inference/cuda/cu" // registers the CUDA backend on every device
	"github.com/beamml/beamml/inference/graph"
)

func init() {
	openGPU = func() (graph.Compiler, string, error) {
		b, err := inference.ResolveDevice(inference.CUDA)
		if err != nil {
			return nil, "", err
		}
		cb, ok := b.(*cuda.Backend)
		if !ok {
			return nil, "", fmt.Errorf("the backend registered as %q is a %T, not the CUDA backend", inference.CUDA, b)
		}
		devs, err := cb.Devices()
		if err != nil {
			return nil, "", err
		}
		var names []string
		for _, dev := range devs {
			name := dev.Name()
			if b, ok := dev.(interface{ BLAS() string }); ok {
				name += ", " + b.BLAS()
			}
			names = append(names, name)
		}
		return cb, strings.Join(names, "; "), nil
	}
}

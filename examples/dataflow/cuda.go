//go:build cuda

package main

// Built with the cuda tag (CGO_ENABLED=1 go build -tags cuda), the binary
// registers the GPU backend, so --device cuda and Device(CUDA) and Auto
// run on the GPU.
import _ "github.com/beamml/beamml/inference/cuda/cu"

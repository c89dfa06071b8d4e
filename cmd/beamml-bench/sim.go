//go:build cgo

package main

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/kernels/emu"
	"github.com/beamml/beamml/internal/sim"
)

// -device sim: the CUDA backend's executor on the simulated device, which
// runs the host-emulated kernels (docs/design.md, rule 6). Its times say
// nothing about a GPU; its host nodes and outputs are the GPU path's.
func init() {
	simBackend = func() (inference.Backend, *simDevice, error) {
		runner := emu.NewRunner()
		dev := sim.New(sim.Options{Runner: runner})
		b := cuda.NewBackend(func() (cuda.Device, error) { return dev, nil })
		return b, &simDevice{dev, runner.Launched}, b.Available()
	}
}

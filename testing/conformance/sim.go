//go:build cgo

package main

import (
	"github.com/beamml/beamml/inference"
	"github.com/beamml/beamml/inference/cuda"
	"github.com/beamml/beamml/internal/kernels/emu"
	"github.com/beamml/beamml/internal/sim"
)

func init() {
	simBackend = func() (inference.Backend, error) {
		dev := sim.New(sim.Options{Runner: emu.NewRunner()})
		b := cuda.NewBackend(func() (cuda.Device, error) { return dev, nil })
		return b, b.Available()
	}
}

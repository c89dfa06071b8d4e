//go:build cuda

package main

import (
	"time"

	"github.com/beamml/beamml/inference/cuda/cu" // also registers the CUDA backend on every device
	"github.com/beamml/beamml/internal/kernels"
)

func init() { loadKernelModules = timeKernelModules }

// timeKernelModules opens device 0 apart from the registered backend and
// loads each module into it, as the backend's Open does.
func timeKernelModules() (string, time.Duration, []moduleLoad, error) {
	start := time.Now()
	d, err := cu.Open(0)
	if err != nil {
		return "", 0, nil, err
	}
	defer d.Close()
	open := time.Since(start)
	var loads []moduleLoad
	for _, m := range kernels.Modules() {
		start := time.Now()
		if err := d.LoadModule(m); err != nil {
			return d.Name(), open, loads, err
		}
		loads = append(loads, moduleLoad{Name: m.Name, FatbinBytes: len(m.Fatbin), Took: time.Since(start)})
	}
	return d.Name() + ", " + d.BLAS(), open, loads, nil
}

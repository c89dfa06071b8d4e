//go:build cuda

package main

// Built with cgo and the cuda tag, the stand-in links libm as a CUDA
// worker links libcuda, without needing the CUDA toolkit.

/*
#cgo LDFLAGS: -lm
#include <math.h>
*/
import "C"

var _ = C.sqrt(2)

// Package gpurun tests the GPU bring-up without a GPU: scripts/gpu-run.sh
// runs on a fake device (testdata/fake: nvidia-smi, ncu, compute-sanitizer,
// ptxas, the loader's cache, Python with torch, and a stand-in for every
// binary of the bundle's payload), as the two device calls of
// docs/gpu/README.md would run it, with a stage that hangs, a GPU that
// cannot be used and a missing cuBLAS; and scripts/gpu/send-size.sh counts
// what a device call sends. It has no Go code of its own.
package gpurun

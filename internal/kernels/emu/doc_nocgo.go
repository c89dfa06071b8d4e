//go:build !cgo

// Package emu needs cgo and a C++ compiler: the kernels are C++ on the
// host. In builds without cgo it is empty, and the tests that use it (all
// marked //go:build cgo) do not build.
package emu

// Package inference is the Beam-free core of beamml: tensors, the Model and
// Backend contracts, the registries that loaders and backends fill from their
// init functions, and the process-wide cache that loads each model once.
//
// The pieces plug together like database/sql drivers. A model format (onnx,
// the test-only stub) registers a Loader with RegisterLoader; a device
// (cpu, cuda) registers a Backend with RegisterBackend. A Spec names the
// model's URI, format and device; Acquire resolves the device, calls the
// loader once per process for each distinct Spec, and hands every caller a
// reference to the same Model.
//
// Nothing in this package or below it imports Beam: the runtime can be used
// from any Go program, and beam/runinference builds the PTransforms on top.
//
// Who it is for: pipeline authors, who build Examples from Tensors, name
// models with a Spec and a Device, and read results with Data; Go programs
// that run a model without Beam (Acquire, Model.Run); and writers of a
// model format (Loader, RegisterLoader) or a device (Backend,
// RegisterBackend, and the compile contract stated at Backend).
package inference

// Package onnxpb holds the protobuf messages of ONNX model files that the
// runtime reads, generated from onnx.proto.
package onnxpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative onnx.proto

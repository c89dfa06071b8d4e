// Command tiny is a small program for dataflowgpu's tests to build for
// platforms other than linux/amd64.
package main

func main() {}

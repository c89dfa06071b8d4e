// Command worker is a stand-in GPU worker for dataflowgpu's tests: a Beam
// program, so that its build information names the Beam version.
package main

import (
	"context"
	"flag"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

func main() {
	flag.Parse()
	beam.Init()
	p, s := beam.NewPipelineWithRoot()
	beam.Create(s, 1)
	_ = beamx.Run(context.Background(), p)
}

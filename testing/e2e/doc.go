// Package e2e tests the path a Dataflow Runner v2 worker takes, on one
// machine and without Docker: Beam's boot binary (the Go SDK container's
// entry point) fetches the separately built worker binary from the runner
// and runs it, and the worker runs RunInference.
//
// TestWorkerPath builds, into its temporary directory and with the
// versions in go.mod:
//
//   - boot, from github.com/apache/beam/sdks/v2/go/container;
//   - prism's job server, from github.com/apache/beam/sdks/v2/go/cmd/prism;
//   - the pipeline of ./pipeline twice: as the launcher (a plain build) and
//     as the worker (CGO_ENABLED=0, as Beam builds workers), each with its
//     own build marker linked in.
//
// It starts prism on a free port, submits the pipeline with
//
//	--runner=universal --endpoint=localhost:PORT --environment_type=PROCESS
//	--environment_config={"command":BOOT} --worker_binary=WORKER
//
// and checks that every input got a prediction, that the process that made
// them is boot's copy of the staged worker binary (same sha256, the worker's
// build marker, CGO_ENABLED=0) as boot's own log lines say, and that the
// model was loaded once in that process.
//
// Prism v2.77.0 starts a PROCESS environment as COMMAND --id='ID'
// --provision_endpoint=…, with the quotes inside the argument, and boot
// hands the quoted id on, so the runner rejects the worker as unknown
// ("… read from context metadata but not registered in worker pool"), and
// the job waits forever. The test therefore
// names itself as the command: its TestMain strips the quotes and execs
// boot, adding --semi_persist_dir so that boot stages the worker in the
// test's directory instead of /tmp.
//
// Go's build cache keeps the rebuilds cheap; the binaries themselves live
// only as long as the test. Run it alone with make e2e.
package e2e

package runinference

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/beamml/beamml/inference"
)

// DeviceFailureExitStatus is the status a worker process exits with after
// its device failed (inference.ErrDeviceFailed): 75, EX_TEMPFAIL of
// sysexits.h, "try again later", which a new process can.
const DeviceFailureExitStatus = 75

// deviceFailureExitDelay is how long the process lives on after a device
// failure: time for the SDK harness to report the bundle's error to the
// runner and to send the log line, before the exit.
var deviceFailureExitDelay = 3 * time.Second

var (
	deviceFailureOnce sync.Once
	// exitProcess ends the process; tests replace it.
	exitProcess = os.Exit
)

// deviceFailed answers an error wrapping inference.ErrDeviceFailed: the
// device is lost for the rest of the process, so no batch may be split
// or retried here, and no element sent to the failures output (it is not
// the element's fault). The bundle fails with the device's error, and the
// process, once, logs why and exits with DeviceFailureExitStatus after
// deviceFailureExitDelay, so that the runner starts a new worker process
// with a working device and retries the bundle there.
func deviceFailed(ctx context.Context, spec inference.Spec, err error) error {
	deviceFailures.Inc(ctx, 1)
	deviceFailureOnce.Do(func() {
		log.Errorf(ctx, "beamml: RunInference: model %s: the device failed, and nothing more can run on it in this process: %v. "+
			"The worker process exits with status %d in %v so that the runner restarts it; the bundle is retried in the new process.",
			spec.URI, err, DeviceFailureExitStatus, deviceFailureExitDelay)
		time.AfterFunc(deviceFailureExitDelay, func() { exitProcess(DeviceFailureExitStatus) })
	})
	return fmt.Errorf("RunInference: model %s: the device failed; this worker process exits with status %d so that the runner restarts it: %w",
		spec.URI, DeviceFailureExitStatus, err)
}

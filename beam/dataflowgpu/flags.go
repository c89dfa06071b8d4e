package dataflowgpu

import (
	"flag"
	"fmt"
	"strings"

	// Both register on flag.CommandLine the flags Apply sets: jobopts
	// --worker_binary, --experiments and --resource_hints; the Dataflow runner
	// --dataflow_service_options, --worker_machine_type, --disk_size_gb and
	// --sdk_container_image.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
)

// RegisterFlags defines on fs the flags that fill an Options, and returns the
// Options they fill once fs is parsed:
//
//	--gpu_type             Accelerator    (default "": no GPU)
//	--gpu_count            Count          (default 1)
//	--gpu_mps              MPS            (default false)
//	--gpu_machine_type     MachineType
//	--gpu_disk_size_gb     DiskSizeGB     (default 50)
//	--gpu_container_image  ContainerImage
//	--gpu_worker_binary    WorkerBinary
//
// The names carry a gpu_ prefix so that they do not clash with Beam's own
// flags. An empty --gpu_type lets a launcher run the same pipeline without
// GPUs: it calls [Options.Apply] only when Accelerator is set.
func RegisterFlags(fs *flag.FlagSet) *Options {
	o := &Options{Count: 1, DiskSizeGB: minDiskSizeGB}
	fs.StringVar((*string)(&o.Accelerator), "gpu_type", "",
		"Dataflow GPU type per worker, one of: "+acceleratorList()+" (empty: no GPU)")
	fs.IntVar(&o.Count, "gpu_count", o.Count,
		"GPUs per worker; on G2, A2 and A3 machine types, the count the machine type carries")
	fs.BoolVar(&o.MPS, "gpu_mps", false,
		"share each worker's GPU between its SDK processes with NVIDIA MPS (only with --gpu_count=1)")
	fs.StringVar(&o.MachineType, "gpu_machine_type", "",
		"worker machine type: N1 for T4, P4, P100, V100; G2 for L4; A2 for A100; A3 for H100")
	fs.IntVar(&o.DiskSizeGB, "gpu_disk_size_gb", o.DiskSizeGB,
		fmt.Sprintf("worker boot disk in GB, at least %d", minDiskSizeGB))
	fs.StringVar(&o.ContainerImage, "gpu_container_image", "",
		"SDK container image with the CUDA runtime")
	fs.StringVar(&o.WorkerBinary, "gpu_worker_binary", "",
		"the pipeline built with CGO_ENABLED=1 -tags cuda, run by the GPU workers")
	return o
}

// Apply validates o, checks its worker binary ([Options.CheckWorker]) and
// sets its flags (those [Options.Flags] lists) on
// flag.CommandLine, for beamx.Run and the Dataflow runner to read. Call it
// after flag.Parse.
//
// o's values replace whatever the command line gave --worker_machine_type,
// --disk_size_gb, --sdk_container_image and --worker_binary. The list-valued
// flags are merged instead: --experiments keeps its entries and gains
// use_runner_v2; --dataflow_service_options keeps its entries except an
// earlier worker_accelerator, which o's replaces; --resource_hints gains o's
// accelerator hint, which wins over an earlier one because Beam keeps the
// last hint given for a URN.
func (o Options) Apply() error {
	if err := o.Validate(); err != nil {
		return err
	}
	if err := o.checkWorker(); err != nil {
		return err
	}
	for _, f := range o.beamFlags() {
		fl := flag.CommandLine.Lookup(f.Name)
		if fl == nil {
			return fmt.Errorf("dataflowgpu: flag --%s is not registered on flag.CommandLine", f.Name)
		}
		value := f.Value
		switch f.Name {
		case "experiments":
			value = mergeList(fl.Value.String(), value, func(e string) bool { return e == f.Value })
		case "dataflow_service_options":
			value = mergeList(fl.Value.String(), value, func(e string) bool {
				return strings.HasPrefix(e, "worker_accelerator=")
			})
		}
		if err := flag.CommandLine.Set(f.Name, value); err != nil {
			return fmt.Errorf("dataflowgpu: setting --%s=%s: %w", f.Name, value, err)
		}
	}
	return nil
}

// mergeList appends entry to the comma-separated list, after dropping the
// entries that replaced reports true for.
func mergeList(list, entry string, replaced func(string) bool) string {
	var kept []string
	for e := range strings.SplitSeq(list, ",") {
		if e != "" && !replaced(e) {
			kept = append(kept, e)
		}
	}
	return strings.Join(append(kept, entry), ",")
}

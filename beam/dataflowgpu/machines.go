package dataflowgpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Accelerator is a Compute Engine GPU type, spelled as Dataflow's
// worker_accelerator option and the accelerator resource hint spell it.
type Accelerator string

// The GPU types this package knows. Source: "GPU machine types",
// https://cloud.google.com/compute/docs/gpus (accelerator type strings, and
// which machine series each one attaches to).
//
// A100_80GB keeps its underscore because "A10080GB" would not read as a name.
const (
	T4        Accelerator = "nvidia-tesla-t4"   // N1
	P4        Accelerator = "nvidia-tesla-p4"   // N1
	P100      Accelerator = "nvidia-tesla-p100" // N1
	V100      Accelerator = "nvidia-tesla-v100" // N1
	A100      Accelerator = "nvidia-tesla-a100" // A2 Standard (A100 40GB)
	A100_80GB Accelerator = "nvidia-a100-80gb"  // A2 Ultra
	L4        Accelerator = "nvidia-l4"         // G2
	H100      Accelerator = "nvidia-h100-80gb"  // A3 High and A3 Edge
)

// h100Mega is the GPU of a3-megagpu-8g. It is listed only so that an error can
// say what that machine type carries; it is not among the supported types.
const h100Mega Accelerator = "nvidia-h100-mega-80gb"

// Accelerators lists the supported GPU types in the order error messages and
// flag help use.
func Accelerators() []Accelerator {
	return []Accelerator{T4, P4, P100, V100, A100, A100_80GB, L4, H100}
}

func (a Accelerator) known() bool { return slices.Contains(Accelerators(), a) }

func acceleratorList() string {
	names := make([]string, 0, len(Accelerators()))
	for _, a := range Accelerators() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}

// n1Limit is the most vCPUs and memory an N1 machine may have with Count GPUs
// of one type attached.
type n1Limit struct {
	Count    int
	VCPUs    int
	MemoryGB int
}

// n1Limits holds, for each GPU type that attaches to N1 machines, the valid
// GPU counts and the vCPU and memory ceiling of each count.
//
// Source: "GPU machine types", N1 section (tables for T4, P4, V100, P100),
// https://cloud.google.com/compute/docs/gpus. The search tool here returns only
// the opening of that page, so the rows were checked against the copy of the
// same tables in SkyPilot's GCP catalog (_NUM_ACC_TO_MAX_CPU_AND_MEMORY,
// "Refer to: https://cloud.google.com/compute/docs/gpus"). P100 with 4 GPUs
// allows 96 vCPUs and 624 GB in most zones but only 64 vCPUs and 208 GB in
// us-east1-c, europe-west1-b and europe-west1-d; the zone is not known here,
// so the larger limit applies.
var n1Limits = map[Accelerator][]n1Limit{
	T4:   {{1, 48, 312}, {2, 48, 312}, {4, 96, 624}},
	P4:   {{1, 24, 156}, {2, 48, 312}, {4, 96, 624}},
	P100: {{1, 16, 104}, {2, 32, 208}, {4, 96, 624}},
	V100: {{1, 12, 78}, {2, 24, 156}, {4, 48, 312}, {8, 96, 624}},
}

// fixedMachine is an accelerator-optimized machine type: its GPU type and
// count are part of the machine type and cannot be chosen.
type fixedMachine struct {
	MachineType string
	Accelerator Accelerator
	Count       int
}

// fixedMachines lists the G2, A2 and A3 machine types with their GPUs.
//
// Sources: "GPU machine types", https://cloud.google.com/compute/docs/gpus
// (G2: "To run NVIDIA L4 GPUs, you must use a G2 accelerator-optimized machine
// type", g2-standard-4 1 GPU ...; A2 Standard nvidia-tesla-a100, A2 Ultra
// nvidia-a100-80gb; A3 High and A3 Edge nvidia-h100-80gb, A3 Mega
// nvidia-h100-mega-80gb), "Accelerator-optimized machine family",
// https://cloud.google.com/compute/docs/accelerator-optimized-machines, and
// Dataflow's L4 guide, https://cloud.google.com/dataflow/docs/gpu/use-l4-gpus
// ("The L4 GPU type is available only with the G2 accelerator-optimized
// machine type"). The per-type GPU counts below could not be read from the
// pages through the search tool beyond g2-standard-4; they are the counts the
// machine-type names and the project brief give.
var fixedMachines = []fixedMachine{
	{"g2-standard-4", L4, 1},
	{"g2-standard-8", L4, 1},
	{"g2-standard-12", L4, 1},
	{"g2-standard-16", L4, 1},
	{"g2-standard-24", L4, 2},
	{"g2-standard-32", L4, 1},
	{"g2-standard-48", L4, 4},
	{"g2-standard-96", L4, 8},

	{"a2-highgpu-1g", A100, 1},
	{"a2-highgpu-2g", A100, 2},
	{"a2-highgpu-4g", A100, 4},
	{"a2-highgpu-8g", A100, 8},
	{"a2-megagpu-16g", A100, 16},

	{"a2-ultragpu-1g", A100_80GB, 1},
	{"a2-ultragpu-2g", A100_80GB, 2},
	{"a2-ultragpu-4g", A100_80GB, 4},
	{"a2-ultragpu-8g", A100_80GB, 8},

	{"a3-highgpu-1g", H100, 1},
	{"a3-highgpu-2g", H100, 2},
	{"a3-highgpu-4g", H100, 4},
	{"a3-highgpu-8g", H100, 8},
	{"a3-edgegpu-8g", H100, 8},
	{"a3-megagpu-8g", h100Mega, 8},
}

// series names the machine series a GPU type attaches to, for messages.
func (a Accelerator) series() string {
	switch a {
	case L4:
		return "G2"
	case A100:
		return "A2 Standard"
	case A100_80GB:
		return "A2 Ultra"
	case H100:
		return "A3 High or A3 Edge"
	}
	return "N1"
}

func lookupFixed(machineType string) (fixedMachine, bool) {
	i := slices.IndexFunc(fixedMachines, func(m fixedMachine) bool { return m.MachineType == machineType })
	if i < 0 {
		return fixedMachine{}, false
	}
	return fixedMachines[i], true
}

// fixedChoices lists the machine types that carry a, with their GPU counts:
// "g2-standard-4 (1 GPU), g2-standard-24 (2 GPUs), ...".
func fixedChoices(a Accelerator) string {
	var s []string
	for _, m := range fixedMachines {
		if m.Accelerator == a {
			s = append(s, fmt.Sprintf("%s (%s)", m.MachineType, gpus(m.Count)))
		}
	}
	return strings.Join(s, ", ")
}

// n1Series gives each predefined N1 series its memory per vCPU (GB) and its
// sizes (vCPUs). Source: "General-purpose machine family", N1 machine types,
// https://cloud.google.com/compute/docs/general-purpose-machines#n1_machines
// (n1-standard 3.75 GB, n1-highmem 6.5 GB, n1-highcpu 0.9 GB per vCPU).
var n1Series = map[string]struct {
	MemoryPerVCPU float64
	Sizes         []int
}{
	"n1-standard": {3.75, []int{1, 2, 4, 8, 16, 32, 64, 96}},
	"n1-highmem":  {6.5, []int{2, 4, 8, 16, 32, 64, 96}},
	"n1-highcpu":  {0.9, []int{2, 4, 8, 16, 32, 64, 96}},
}

const n1Forms = "n1-standard-N, n1-highmem-N, n1-highcpu-N or custom-N-M (N vCPUs, M MB)"

// n1Shape is the vCPU count and memory (GB) of an N1 machine type.
type n1Shape struct {
	VCPUs    int
	MemoryGB float64
}

// parseN1 derives the shape of an N1 machine type from its name:
// n1-standard-N, n1-highmem-N, n1-highcpu-N, and the custom N1 form
// custom-N-M or custom-N-M-ext with M in MB. ok is false for a name of
// another series; err is set for an N1-looking name that is malformed.
func parseN1(machineType string) (shape n1Shape, ok bool, err error) {
	if rest, found := strings.CutPrefix(machineType, "custom-"); found {
		rest = strings.TrimSuffix(rest, "-ext")
		cpus, mem, found := strings.Cut(rest, "-")
		n, err1 := strconv.Atoi(cpus)
		mb, err2 := strconv.Atoi(mem)
		if !found || err1 != nil || err2 != nil || n < 1 || mb < 1 {
			return n1Shape{}, true, fmt.Errorf("machine type %q: want custom-N-M with N vCPUs and M MB of memory", machineType)
		}
		return n1Shape{VCPUs: n, MemoryGB: float64(mb) / 1024}, true, nil
	}
	i := strings.LastIndexByte(machineType, '-')
	if i < 0 {
		return n1Shape{}, false, nil
	}
	series, ok := n1Series[machineType[:i]]
	if !ok {
		return n1Shape{}, false, nil
	}
	n, err := strconv.Atoi(machineType[i+1:])
	if err != nil || !slices.Contains(series.Sizes, n) {
		return n1Shape{}, true, fmt.Errorf("unknown N1 machine type %q; %s sizes are %s",
			machineType, machineType[:i], joinInts(series.Sizes))
	}
	return n1Shape{VCPUs: n, MemoryGB: float64(n) * series.MemoryPerVCPU}, true, nil
}

// checkMachine reports why count GPUs of type a cannot run on machineType.
// a must be known and count at least 1.
func checkMachine(a Accelerator, count int, machineType string) []error {
	limits, onN1 := n1Limits[a]
	if !onN1 {
		return checkFixed(a, count, machineType)
	}
	if machineType == "" {
		return []error{fmt.Errorf("no machine type given; %s attaches to N1 machine types: %s", a, n1Forms)}
	}
	shape, isN1, err := parseN1(machineType)
	if err != nil {
		return []error{err}
	}
	if !isN1 {
		return []error{fmt.Errorf("%s attaches to N1 machine types (%s), not %q", a, n1Forms, machineType)}
	}
	i := slices.IndexFunc(limits, func(l n1Limit) bool { return l.Count == count })
	if i < 0 {
		counts := make([]int, len(limits))
		for j, l := range limits {
			counts[j] = l.Count
		}
		return []error{fmt.Errorf("%s of %s on an N1 machine: valid GPU counts are %s", gpus(count), a, joinInts(counts))}
	}
	limit := limits[i]
	var errs []error
	if shape.VCPUs > limit.VCPUs {
		errs = append(errs, fmt.Errorf("%s has %d vCPUs, more than the %d allowed with %s of %s (vCPU limit by GPU count: %s)",
			machineType, shape.VCPUs, limit.VCPUs, gpus(count), a, limitList(limits, func(l n1Limit) int { return l.VCPUs })))
	}
	if shape.MemoryGB > float64(limit.MemoryGB) {
		errs = append(errs, fmt.Errorf("%s has %s GB of memory, more than the %d GB allowed with %s of %s (memory limit by GPU count: %s)",
			machineType, strconv.FormatFloat(shape.MemoryGB, 'f', -1, 64), limit.MemoryGB, gpus(count), a,
			limitList(limits, func(l n1Limit) int { return l.MemoryGB })))
	}
	return errs
}

func checkFixed(a Accelerator, count int, machineType string) []error {
	if machineType == "" {
		return []error{fmt.Errorf("no machine type given; %s runs on %s machine types: %s", a, a.series(), fixedChoices(a))}
	}
	m, ok := lookupFixed(machineType)
	switch {
	case ok && m.Accelerator == a:
		if m.Count != count {
			return []error{fmt.Errorf("%s carries %s of %s, not %d: set the GPU count to %d",
				machineType, gpus(m.Count), a, count, m.Count)}
		}
		return nil
	case ok:
		return []error{fmt.Errorf("%s runs only on %s machine types: %s; %q carries %s",
			a, a.series(), fixedChoices(a), machineType, m.Accelerator)}
	default:
		return []error{fmt.Errorf("%s runs only on %s machine types: %s; not %q",
			a, a.series(), fixedChoices(a), machineType)}
	}
}

func gpus(n int) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// limitList renders "1: 48, 2: 48, 4: 96" (GPU count: limit).
func limitList(limits []n1Limit, value func(n1Limit) int) string {
	s := make([]string, len(limits))
	for i, l := range limits {
		s[i] = fmt.Sprintf("%d: %d", l.Count, value(l))
	}
	return strings.Join(s, ", ")
}

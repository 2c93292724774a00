package runners

import (
	"flag"
	"strconv"

	// Registers Beam's --runner flag, which FromFlags reads.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
)

// FromFlags reads Options from the flags Beam registers on flag.CommandLine
// (--runner, --endpoint, --environment_type, --environment_config,
// --worker_binary, --job_name, --project, --region, --temp_location,
// --staging_location, --service_account_email, --network, --subnetwork,
// --worker_machine_type or its alias --machine_type, --max_num_workers,
// --dry_run), so that a binary can accept Beam's usual command line without
// declaring those flags again (a second declaration panics). Call it after
// flag.Parse. WorkerPackage and Timeout have no Beam flag and stay zero.
func FromFlags() Options {
	get := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	maxWorkers, _ := strconv.Atoi(get("max_num_workers"))
	dryRun, _ := strconv.ParseBool(get("dry_run"))
	machine := get("worker_machine_type")
	if machine == "" {
		machine = get("machine_type")
	}
	return Options{
		Runner:            get("runner"),
		Endpoint:          get("endpoint"),
		EnvironmentType:   get("environment_type"),
		EnvironmentConfig: get("environment_config"),
		WorkerBinary:      get("worker_binary"),
		JobName:           get("job_name"),
		Dataflow: DataflowOptions{
			Project:         get("project"),
			Region:          get("region"),
			TempLocation:    get("temp_location"),
			StagingLocation: get("staging_location"),
			ServiceAccount:  get("service_account_email"),
			Network:         get("network"),
			Subnetwork:      get("subnetwork"),
			MachineType:     machine,
			MaxWorkers:      maxWorkers,
			DryRun:          dryRun,
		},
	}
}

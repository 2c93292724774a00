package runners_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/relabel/relabel/runners"
)

func TestWorkerPath(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	external := runners.Options{EnvironmentType: "EXTERNAL", EnvironmentConfig: "localhost:50000"}
	tests := []struct {
		name string
		o    runners.Options
		p    string
		want string
	}{
		{"embedded: as given", runners.Options{}, "in/*.parquet", "in/*.parquet"},
		{"loopback on a job server: as given", runners.Options{Runner: "flink", Endpoint: "h:8099", EnvironmentType: "loopback"}, "../in/x.parquet", "../in/x.parquet"},
		{"external: made absolute", external, "in/*.parquet", filepath.Join(wd, "in", "*.parquet")},
		{"external: cleaned", external, "./a/../out", filepath.Join(wd, "out")},
		{"external: absolute as given", external, "/data/in/*.parquet", "/data/in/*.parquet"},
		{"external: a URL as given", external, "gs://bucket/in/*.parquet", "gs://bucket/in/*.parquet"},
		{"external: unset stays unset", external, "", ""},
		{"process", runners.Options{EnvironmentType: "PROCESS", EnvironmentConfig: "/boot"}, "out", filepath.Join(wd, "out")},
		{"docker on flink", runners.Options{Runner: "flink", Endpoint: "h:8099"}, "out", filepath.Join(wd, "out")},
		{"dataflow", runners.Options{Runner: "dataflow"}, "out", filepath.Join(wd, "out")},
	}
	for _, tc := range tests {
		got, err := tc.o.WorkerPath(tc.p)
		if err != nil || got != tc.want {
			t.Errorf("%s: WorkerPath(%q) = %q, %v; want %q", tc.name, tc.p, got, err, tc.want)
		}
	}
}

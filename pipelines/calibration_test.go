package pipelines

import (
	"errors"
	"testing"

	"github.com/relabel/relabel/options"
	"github.com/relabel/relabel/transforms/stages"
)

// TestIncrementalCalibration: an incremental run with --temperature auto
// keeps the temperature the stored posteriors were made with (recorded by
// the last run) and records it for the next; one whose last run recorded
// none is refused naming --incremental; a fixed temperature is used as
// given.
func TestIncrementalCalibration(t *testing.T) {
	p := &Plan{Options: options.Defaults()}
	opts := map[string]string{}
	cal, err := p.incrementalCalibration(map[string]string{stages.MetaCalibratedTemperature: "0.3125"}, opts)
	if err != nil || cal.Auto || cal.Temperature != 0.3125 {
		t.Fatalf("kept calibration %+v (%v), want temperature 0.3125", cal, err)
	}
	if opts[stages.MetaCalibratedTemperature] != "0.3125" {
		t.Errorf("recorded %q, want 0.3125", opts[stages.MetaCalibratedTemperature])
	}
	for _, last := range []map[string]string{{}, {stages.MetaCalibratedTemperature: "x"}, {stages.MetaCalibratedTemperature: "0"}} {
		_, err := p.incrementalCalibration(last, map[string]string{})
		var oe *options.Error
		if !errors.As(err, &oe) || oe.Flag != "incremental" {
			t.Errorf("last %v: error %v, want one naming --incremental", last, err)
		}
	}
	p.Options.Temperature = options.Some(0.4)
	cal, err = p.incrementalCalibration(map[string]string{}, opts)
	if err != nil || cal.Temperature != 0.4 || opts[stages.MetaCalibratedTemperature] != "0.4" {
		t.Errorf("fixed temperature: %+v (%v), recorded %q", cal, err, opts[stages.MetaCalibratedTemperature])
	}
}

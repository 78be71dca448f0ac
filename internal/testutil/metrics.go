package testutil

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter returns the sum of the counter series named name that g gathers
// whose labels include every pair of labels (all of them, for none), as
// /metrics would show them.
func Counter(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			sum += s.GetCounter().GetValue()
		}
	}
	return sum
}

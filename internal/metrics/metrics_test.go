package metrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hangar-mcp/hangar/internal/metrics"
	hangartest "github.com/hangar-mcp/hangar/internal/testutil"
)

// TestBoundedLabels: however many names, methods and kinds callers pass,
// the series stay bounded.
func TestBoundedLabels(t *testing.T) {
	m := metrics.New("test")
	for i := range 3 * metrics.MaxNames {
		m.Call("p", "tools/call", fmt.Sprintf("tool-%d", i), time.Millisecond, "")
		m.Call("p", fmt.Sprintf("x/%d", i), "", time.Millisecond, fmt.Sprintf("kind-%d", i))
		m.Request(fmt.Sprintf("y/%d", i), false)
	}
	n, err := testutil.GatherAndCount(m.Registry(), "hangar_plugin_calls_total")
	if err != nil {
		t.Fatal(err)
	}
	// MaxNames tool names, "_other", and one series for every unknown method.
	if n != metrics.MaxNames+2 {
		t.Errorf("%d call series", n)
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "hangar_plugin_call_errors_total"); n != 1 {
		t.Errorf("%d error series, want 1 (method other, kind other)", n)
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "hangar_mcp_requests_total"); n != 1 {
		t.Errorf("%d request series, want 1 (method other)", n)
	}
}

func TestNilRecordsNothing(t *testing.T) {
	var m *metrics.Metrics
	m.Call("p", "tools/call", "t", time.Second, metrics.KindTimeout)
	m.Request("ping", true)
	m.SessionOpened(metrics.TransportStdio)()
	m.Reloaded(false)
	m.SetPlugins(nil)
}

func TestSessions(t *testing.T) {
	m := metrics.New("test")
	closeA := m.SessionOpened(metrics.TransportStreamableHTTP)
	closeB := m.SessionOpened(metrics.TransportStreamableHTTP)
	closeA()
	closeA() // once only
	if got := testutil.ToFloat64(m.Sessions(metrics.TransportStreamableHTTP)); got != 1 {
		t.Errorf("open sessions = %v", got)
	}
	closeB()
}

// TestLongNames: a name longer than MaxLabel counts under "_other", so
// that no label value is longer (issue 15.6).
func TestLongNames(t *testing.T) {
	m := metrics.New("test")
	long := strings.Repeat("x", 60000)
	m.Call("p", "tools/call", long, time.Millisecond, metrics.KindTimeout)
	m.Call("p", "tools/call", long[:metrics.MaxLabel], time.Millisecond, "")
	m.Refused("p", "tool", "invalid")
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, mt := range f.Metric {
			for _, l := range mt.Label {
				if len(l.GetValue()) > metrics.MaxLabel {
					t.Errorf("%s: label %s of %d bytes", f.GetName(), l.GetName(), len(l.GetValue()))
				}
			}
		}
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "hangar_plugin_calls_total"); n != 2 {
		t.Errorf("%d call series, want 2 (a name of %d bytes, and _other)", n, metrics.MaxLabel)
	}
}

// TestProgressDropped: the count of a plugin's dropped progress
// notifications, as the plugin-state reader reports it, is a counter.
func TestProgressDropped(t *testing.T) {
	m := metrics.New("test")
	m.SetPlugins(func() []metrics.Plugin { return []metrics.Plugin{{Name: "p", ProgressDropped: 3}} })
	want := `
# HELP hangar_plugin_progress_dropped_total Progress notifications of a plugin dropped because they were not under the progress token of the call that sent them (an empty or foreign token, or a call without one), since its last load.
# TYPE hangar_plugin_progress_dropped_total counter
hangar_plugin_progress_dropped_total{plugin="p"} 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "hangar_plugin_progress_dropped_total"); err != nil {
		t.Error(err)
	}
}

// TestRequests: each method and outcome counts in a series of its own,
// unknown methods under "other", however often they come.
func TestRequests(t *testing.T) {
	m := metrics.New("test")
	for range 3 {
		m.Request("tools/call", false)
		m.Request("tools/call", true)
		m.Request("ping", false)
		m.Request("x/unknown", true)
		m.Request("y/unknown", true)
	}
	for _, c := range []struct {
		method, outcome string
		want            float64
	}{
		{"tools/call", "ok", 3},
		{"tools/call", "error", 3},
		{"ping", "ok", 3},
		{"other", "error", 6},
	} {
		if got := hangartest.Counter(t, m.Registry(), "hangar_mcp_requests_total", map[string]string{"method": c.method, "outcome": c.outcome}); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.outcome, got, c.want)
		}
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "hangar_mcp_requests_total"); n != 4 {
		t.Errorf("%d request series, want 4", n)
	}
}

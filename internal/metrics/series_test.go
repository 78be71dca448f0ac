package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSeriesRemembered: calls counted through remembered series count as
// they did, and only names with a label of their own are remembered,
// however many names callers pass.
func TestSeriesRemembered(t *testing.T) {
	m := New("test")
	for range 3 {
		for i := range 3 * MaxNames {
			m.Call("p", "tools/call", fmt.Sprintf("tool-%d", i), time.Millisecond, "")
		}
		m.Call("p", "tools/call", strings.Repeat("x", MaxLabel+1), time.Millisecond, KindTimeout)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("p", "tools/call", "tool-0")); got != 3 {
		t.Errorf("tool-0 counted %v times, want 3", got)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("p", "tools/call", "_other")); got != 3*(2*MaxNames+1) {
		t.Errorf("_other counted %v times, want %d", got, 3*(2*MaxNames+1))
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues("p", "tools/call", "_other", KindTimeout)); got != 3 {
		t.Errorf("the long name's timeouts counted %v times under _other, want 3", got)
	}
	n := 0
	m.series.Range(func(any, any) bool { n++; return true })
	if n != MaxNames {
		t.Errorf("%d series remembered, want %d (the names with labels of their own)", n, MaxNames)
	}
}

package wire_test

import (
	"slices"
	"testing"

	"github.com/hangar-mcp/hangar/internal/server/wire"
)

// Versions compare by their order; a revision Hangar does not know by its
// date; a string that names no revision is neither at nor before any.
func TestVersionOrder(t *testing.T) {
	for _, c := range []struct {
		v, min          string
		atLeast, before bool
	}{
		{wire.Version20260728, wire.Version20260728, true, false},
		{wire.Version20251125, wire.Version20260728, false, true},
		{wire.Version20241105, wire.Version20250326, false, true},
		{wire.Version20260728, wire.Version20241105, true, false},
		{"2099-01-01", wire.Version20260728, true, false},
		{"2025-12-31", wire.Version20260728, false, true},
		{"2024-01-01", wire.Version20241105, false, true},
		{"latest", wire.Version20260728, false, false},
		{"DRAFT-2026-v1", wire.Version20241105, false, false},
		{"", wire.Version20241105, false, false},
		{"2026-7-28", wire.Version20260728, false, false},
		{"2026/07/28", wire.Version20241105, false, false},
	} {
		if got := wire.AtLeast(c.v, c.min); got != c.atLeast {
			t.Errorf("AtLeast(%q, %q) = %v", c.v, c.min, got)
		}
		if got := wire.Before(c.v, c.min); got != c.before {
			t.Errorf("Before(%q, %q) = %v", c.v, c.min, got)
		}
	}
	vs := wire.Versions()
	if !slices.IsSorted(vs) || vs[len(vs)-1] != wire.Latest || len(vs) != 5 {
		t.Errorf("Versions() = %v: want the five, oldest first, ending with Latest", vs)
	}
	vs[0] = "changed"
	if wire.Versions()[0] != wire.Version20241105 {
		t.Error("Versions() returns the package's own slice")
	}
}

// A minimum that is not a version Hangar speaks is a programming error.
func TestVersionOrderUnknownMinimum(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("AtLeast with a minimum Hangar does not speak did not panic")
		}
	}()
	wire.AtLeast(wire.Version20260728, "2099-01-01")
}

// TestSessionVersions pins the versions the sessions speak to the go-sdk's
// versions with sessions, up to 2025-11-25 and none after, newest first:
// a go-sdk that adds a version before 2026-07-28, or drops one, changes
// what the sessions speak, and fails here first.
func TestSessionVersions(t *testing.T) {
	want := []string{wire.Version20251125, wire.Version20250618, wire.Version20250326, wire.Version20241105}
	if got := wire.SessionVersions(); !slices.Equal(got, want) {
		t.Errorf("SessionVersions() = %v, want %v", got, want)
	}
	for _, v := range want {
		if !wire.InSessions(v) {
			t.Errorf("InSessions(%q) = false", v)
		}
	}
	for _, v := range []string{wire.Version20260728, "2026-03-01", "2025-11-26", "2024-11-04", ""} {
		if wire.InSessions(v) {
			t.Errorf("InSessions(%q) = true", v)
		}
	}
}

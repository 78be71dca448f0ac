package wire

import "slices"

// The protocol versions Hangar speaks (package core describes how they
// differ).
const (
	Version20241105 = "2024-11-05"
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

// versions are the protocol versions Hangar speaks, oldest first.
var versions = []string{Version20241105, Version20250326, Version20250618, Version20251125, Version20260728}

// Versions returns the protocol versions Hangar speaks, oldest first.
func Versions() []string { return slices.Clone(versions) }

// Latest is the newest protocol version Hangar speaks.
const Latest = Version20260728

// AtLeast reports whether v names a revision of MCP at or after min (one
// of the versions Hangar speaks). A version Hangar speaks is placed by
// the order of Versions; a revision it does not know (a date, such as
// "2099-01-01") by its date; anything else ("latest", "DRAFT-2026-v1",
// "") is no revision, and neither at nor before any.
func AtLeast(v, min string) bool {
	c, ok := compare(v, min)
	return ok && c >= 0
}

// Before reports whether v names a revision of MCP before min; as
// AtLeast, anything but a revision is neither.
func Before(v, min string) bool {
	c, ok := compare(v, min)
	return ok && c < 0
}

// compare compares the revision v with the version min Hangar speaks; it
// reports false if v is no revision.
func compare(v, min string) (int, bool) {
	j := slices.Index(versions, min)
	if j < 0 {
		panic("wire: " + min + " is not a version Hangar speaks")
	}
	if i := slices.Index(versions, v); i >= 0 {
		return i - j, true
	}
	if !isDate(v) {
		return 0, false
	}
	switch {
	case v < min: // dates compare as strings
		return -1, true
	case v > min:
		return 1, true
	}
	return 0, true
}

// isDate reports whether v has the shape of a revision's name, YYYY-MM-DD.
func isDate(v string) bool {
	if len(v) != len("2006-01-02") {
		return false
	}
	for i := range len(v) {
		switch {
		case i == 4 || i == 7:
			if v[i] != '-' {
				return false
			}
		case v[i] < '0' || v[i] > '9':
			return false
		}
	}
	return true
}

package pdk

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPanicMessageCapped: a panic's message reaches the client and the log
// at most maxPanicMessage bytes long, cut between characters, saying how
// much was left out.
func TestPanicMessageCapped(t *testing.T) {
	short := "assignment to entry in nil map"
	if got := capMessage(short); got != short {
		t.Errorf("capMessage(%q) = %q", short, got)
	}
	long := strings.Repeat("é", 1<<20) // 2 MiB, characters of two bytes
	got := capMessage(long)
	kept, _, ok := strings.Cut(got, "... (")
	if !ok || len(kept) > maxPanicMessage || len(kept) < maxPanicMessage-1 || !utf8.ValidString(kept) {
		t.Fatalf("capMessage of 2 MiB kept %d bytes (valid UTF-8: %v), want at most %d, whole characters", len(kept), utf8.ValidString(kept), maxPanicMessage)
	}
	if want := "more bytes)"; !strings.HasSuffix(got, want) || !strings.Contains(got, "("+strconv.Itoa(len(long)-len(kept))+" more") {
		t.Errorf("capMessage's tail = %q, want the count of bytes left out", got[len(kept):])
	}
	err := panicError("boom", long)
	if first, _, _ := strings.Cut(err.Error(), "\n"); len(first) > maxPanicMessage+200 {
		t.Errorf("a 2 MiB panic's error line is %d bytes", len(first))
	}
}

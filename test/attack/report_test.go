package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCompareIDs(t *testing.T) {
	ids := []string{"4.10", "0.1", "4.9", "10.1", "4.1", "2.1"}
	slices.SortFunc(ids, compareIDs)
	if want := []string{"0.1", "2.1", "4.1", "4.9", "4.10", "10.1"}; !slices.Equal(ids, want) {
		t.Errorf("sorted %v, want %v", ids, want)
	}
}

// TestWriteReport: the table replaces what is between the markers of a
// Markdown file and nothing else; a .json file gets JSON; a failed attack
// shows its errors.
func TestWriteReport(t *testing.T) {
	results := []*outcome{
		{ID: "1.1", Name: "a", Attempt: "pipes | in text", Passed: true, Result: "held", Figures: []figure{{"x", "1"}, {"y", "2"}}},
		{ID: "1.2", Name: "b", Attempt: "b", Errors: []string{"it broke\nbadly"}},
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.md")
	os.WriteFile(doc, []byte("# Title\n\n"+beginMarker+"\nold table\n"+endMarker+"\n\nAfter.\n"), 0o644)
	for range 2 { // idempotent
		if err := writeReport(doc, results, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(doc)
	s := string(b)
	for _, want := range []string{
		"# Title\n\n" + beginMarker + "\n", endMarker + "\n\nAfter.\n",
		"2 attacks, 1 passed, 1 failed",
		`| 1.1 | pipes \| in text | held | x: 1<br>y: 2 |`,
		"| 1.2 | b | **FAILED**: it broke badly |  |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "old table") || strings.Count(s, beginMarker) != 1 {
		t.Errorf("markers not rewritten in place:\n%s", s)
	}

	js := filepath.Join(dir, "r.json")
	if err := writeReport(js, results, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got struct{ Attacks []outcome }
	b, _ = os.ReadFile(js)
	if err := json.Unmarshal(b, &got); err != nil || len(got.Attacks) != 2 || got.Attacks[1].Passed {
		t.Errorf("JSON report: %v, %s", err, b)
	}
}

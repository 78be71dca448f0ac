package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// The markers between which -report rewrites a Markdown file.
const (
	beginMarker = "<!-- BEGIN attack-report -->"
	endMarker   = "<!-- END attack-report -->"
)

// writeReport writes the outcomes to path: as JSON for a .json file; into
// a Markdown file between its markers when it has them; as the Markdown
// table alone otherwise.
func writeReport(path string, results []*outcome, took time.Duration) error {
	if strings.HasSuffix(path, ".json") {
		b, err := json.MarshalIndent(map[string]any{
			"machine": machine(), "seconds": took.Round(time.Second).Seconds(), "attacks": results,
		}, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(path, append(b, '\n'), 0o644)
	}
	table := markdown(results, took)
	old, err := os.ReadFile(path)
	if err == nil {
		i, j := bytes.Index(old, []byte(beginMarker)), bytes.Index(old, []byte(endMarker))
		if i >= 0 && j > i {
			var b bytes.Buffer
			b.Write(old[:i+len(beginMarker)])
			b.WriteString("\n" + table)
			b.Write(old[j:])
			return os.WriteFile(path, b.Bytes(), 0o644)
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(table), 0o644)
}

// markdown renders the table of attempts, results and figures.
func markdown(results []*outcome, took time.Duration) string {
	var b strings.Builder
	passed := 0
	for _, r := range results {
		if r.Passed {
			passed++
		}
	}
	fmt.Fprintf(&b, "\n%d attacks, %d passed, %d failed, in %v on %s.\n\n", len(results), passed, len(results)-passed, took.Round(time.Second), machine())
	b.WriteString("| # | Attempt | Result | Figures |\n|---|---|---|---|\n")
	for _, r := range results {
		result := r.Result
		if !r.Passed {
			result = "**FAILED**: " + strings.Join(r.Errors, "; ")
		}
		var figs []string
		for _, f := range r.Figures {
			figs = append(figs, f.Name+": "+f.Value)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.ID, cell(r.Attempt), cell(result), cell(strings.Join(figs, "<br>")))
	}
	b.WriteString("\n")
	return b.String()
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// machine describes where the suite ran.
func machine() string {
	desc := fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			desc += ", load average " + f[0] + " at the end"
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				desc += ", " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return desc + ", " + runtime.Version()
}

package plugin

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// InOwnProcess runs the test named name again in a process of its own, and
// reports true there: the process's figures (machine code, Go heap) move
// with what the package's other tests leave behind, so a test that
// measures them measures a process that did nothing else. In the calling
// process it reports false once the child has passed, failing t if not.
func InOwnProcess(t *testing.T, name string) bool {
	if os.Getenv("HANGAR_TEST_MEMORY_CHILD") != "" {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "HANGAR_TEST_MEMORY_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a process of its own:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Fatalf("the test's own process: %v", err)
	}
	return false
}

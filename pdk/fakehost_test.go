package pdk

import "testing"

// hostCall records one import call made through a fakeHost.
type hostCall struct {
	name  string
	input string
}

// fakeHost answers value imports from a table and records every call.
type fakeHost struct {
	answers map[string]string
	calls   []hostCall
}

func (h *fakeHost) config(key string) (string, bool) {
	return "", false
}

func (h *fakeHost) call(name string, input []byte) ([]byte, error) {
	h.calls = append(h.calls, hostCall{name, string(input)})
	return []byte(h.answers[name]), nil
}

func (h *fakeHost) notify(name string, input []byte) error {
	h.calls = append(h.calls, hostCall{name, string(input)})
	return nil
}

// withRegistry gives the test a fresh package registry.
func withRegistry(t *testing.T) {
	t.Helper()
	saved := plugin
	plugin = new(registry)
	t.Cleanup(func() { plugin = saved })
}

package mrtr

import "encoding/json"

// HeldCall returns the call with the given id among those that asked for
// input and are not forgotten yet (the Manager's table), or nil: the tests
// see with it when a call leaves the table.
func (m *Manager) HeldCall(id string) *Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[id]
}

// ID returns the call's id, the key of the Manager's table.
func (c *Call) ID() string { return c.id }

// ProgressTokenOf is the progress token Serve reads from params.
func ProgressTokenOf(raw json.RawMessage) (any, error) {
	p, err := parseParams(raw)
	if err != nil {
		return nil, err
	}
	return p.token, nil
}

package tasks

// Following returns how many tasks l follows, for the tests.
func Following(l *Listener) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tasks)
}

//go:build !wasip1

package pdk

// defaultHost outside wasip1 builds has no host to talk to.
var defaultHost hostAPI = noHost{}

// noHost is the host of builds that do not run under Hangar.
type noHost struct{}

func (noHost) config(string) (string, bool)        { return "", false }
func (noHost) call(string, []byte) ([]byte, error) { return nil, ErrNoHost }
func (noHost) notify(string, []byte) error         { return ErrNoHost }

// enableAsk has nothing to enable without a host.
func enableAsk() {}

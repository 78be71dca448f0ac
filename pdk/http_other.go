//go:build !wasip1

package pdk

import "fmt"

// sendHTTP outside wasip1 builds has no host to send requests: a plugin's
// requests are tested under Hangar, with package plugintest.
var sendHTTP = func(meta, body []byte) (status int, out, header []byte, err error) {
	return 0, nil, nil, fmt.Errorf("%w: HTTP requests are sent by Hangar; test a plugin that makes them with package plugintest, which runs it under Hangar with the grants its test gives", ErrNoHost)
}

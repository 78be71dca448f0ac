package testutil

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Sources that never deliver, for tests of fetch deadlines: shared by the
// source package's tests and the attack suite.

// StallListener listens on 127.0.0.1, accepts connections and never reads
// or writes them. It returns the address and a function that closes the
// listener and every connection.
func StallListener() (addr string, closeAll func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or written
			mu.Unlock()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}, nil
}

// Drip answers with a body announced as 1,000,000 bytes and sends one byte
// every 50 ms, until the client goes away.
func Drip(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "1000000")
	for range 1000000 {
		if _, err := w.Write([]byte{0}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

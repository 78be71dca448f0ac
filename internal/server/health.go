package server

import (
	"encoding/json"
	"net/http"
)

// Paths of the operations endpoints.
const (
	HealthPath  = "/healthz" // the process is alive
	ReadyPath   = "/readyz"  // every plugin is loaded, or which are not
	MetricsPath = "/metrics" // Prometheus metrics
)

// HealthHandler answers 200 {"status":"ok"} while the process serves HTTP.
func HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, r, http.StatusOK, map[string]any{"status": "ok"})
	})
}

// ReadyHandler answers 200 {"status":"ready"} when readiness reports every
// plugin loaded (a nil readiness always does), and 503 {"status":"not
// ready"} otherwise, with the plugins that are not ready and why under
// "plugins" when detail is set, or only their number under "not_ready".
func ReadyHandler(readiness func() (bool, map[string]string), detail bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ready, notReady := true, map[string]string(nil)
		if readiness != nil {
			ready, notReady = readiness()
		}
		if ready {
			writeStatus(w, r, http.StatusOK, map[string]any{"status": "ready"})
			return
		}
		body := map[string]any{"status": "not ready", "not_ready": len(notReady)}
		if detail {
			body["plugins"] = notReady
		}
		writeStatus(w, r, http.StatusServiceUnavailable, body)
	})
}

func writeStatus(w http.ResponseWriter, r *http.Request, code int, body map[string]any) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method == http.MethodGet {
		json.NewEncoder(w).Encode(body)
	}
}
